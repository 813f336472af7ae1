-- 0001: topics, partitions, the object index, objects, agents, counters.
-- Times are unix milliseconds (INTEGER); topic ids are 16-byte BLOBs.

CREATE TABLE topics (
    id         BLOB    PRIMARY KEY,
    name       TEXT    NOT NULL UNIQUE,
    partitions INTEGER NOT NULL,
    configs    TEXT    NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE partitions (
    topic_id         BLOB    NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    part             INTEGER NOT NULL,
    next_offset      INTEGER NOT NULL DEFAULT 0,
    log_start_offset INTEGER NOT NULL DEFAULT 0,
    max_timestamp    INTEGER NOT NULL DEFAULT -1,
    PRIMARY KEY (topic_id, part)
) WITHOUT ROWID;

CREATE TABLE objects (
    key        TEXT    PRIMARY KEY,
    size       INTEGER NOT NULL,
    agent_id   TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    state      TEXT    NOT NULL DEFAULT 'live'
) WITHOUT ROWID;

-- One row per (object, partition) run covering offsets [base_offset, end_offset).
CREATE TABLE object_index (
    topic_id    BLOB    NOT NULL,
    part        INTEGER NOT NULL,
    base_offset INTEGER NOT NULL,
    end_offset  INTEGER NOT NULL,
    object_key  TEXT    NOT NULL,
    byte_offset INTEGER NOT NULL,
    byte_length INTEGER NOT NULL,
    batches     INTEGER NOT NULL,
    min_ts      INTEGER NOT NULL,
    max_ts      INTEGER NOT NULL,
    PRIMARY KEY (topic_id, part, base_offset)
) WITHOUT ROWID;

-- The compactor finds an object's runs by key.
CREATE INDEX object_index_object_key ON object_index (object_key);

CREATE TABLE agents (
    id             TEXT    PRIMARY KEY,
    node_id        INTEGER NOT NULL UNIQUE,
    host           TEXT    NOT NULL,
    port           INTEGER NOT NULL,
    zone           TEXT    NOT NULL,
    last_heartbeat INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE counters (
    name  TEXT    PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO counters (name, value) VALUES ('commits', 0);
