-- 0007: the address of each agent's HTTP listener as other agents reach it
-- (host:port), for the zone's shared read cache: an agent reads a byte
-- range another agent owns through that agent. Empty when the agent has no
-- HTTP listener (it is then no member of the ring). Agents that predate
-- the column register without it and get ''.

ALTER TABLE agents ADD COLUMN http_addr text NOT NULL DEFAULT '';
