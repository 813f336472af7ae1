-- 0015: dynamic broker configs (Kafka's BROKER config resource, set with
-- IncrementalAlterConfigs and AlterConfigs), one row per broker that has
-- any: a JSON object of name to value, as group_configs. Broker '' is the
-- cluster default (DYNAMIC_DEFAULT_BROKER_CONFIG), the only one floe sets.

CREATE TABLE broker_configs (
    broker  TEXT PRIMARY KEY,
    configs TEXT NOT NULL
) WITHOUT ROWID;
