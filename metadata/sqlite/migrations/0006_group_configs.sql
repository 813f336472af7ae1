-- 0006: configs set on consumer groups (Kafka's GROUP config resource,
-- IncrementalAlterConfigs and AlterConfigs), one row per group that has
-- any: a JSON object of name to value, as topics.configs. Kept apart from
-- groups: a group's configs outlive its record and may precede it.

CREATE TABLE group_configs (
    group_id TEXT PRIMARY KEY,
    configs  TEXT NOT NULL
) WITHOUT ROWID;
