-- 0008: SASL/SCRAM credentials (RFC 5802 server keys, never passwords),
-- one row per user and mechanism; and the advertised address of each of
-- an agent's Kafka listeners, a JSON object of listener name to
-- host:port, so that Metadata answers a client with the listener it came
-- in on. Agents that predate the column register without it and get '{}'.

CREATE TABLE scram_credentials (
    user_name  text    NOT NULL,
    mechanism  text    NOT NULL,
    salt       bytea   NOT NULL,
    iterations integer NOT NULL,
    stored_key bytea   NOT NULL,
    server_key bytea   NOT NULL,
    PRIMARY KEY (user_name, mechanism)
);

ALTER TABLE agents ADD COLUMN listeners jsonb NOT NULL DEFAULT '{}';
