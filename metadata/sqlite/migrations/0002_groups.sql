-- 0002: consumer groups (committed offsets, coordinator state) and the
-- leases that make one agent a group's coordinator. Times are unix ms.

CREATE TABLE group_offsets (
    group_id     TEXT    NOT NULL,
    topic        TEXT    NOT NULL,
    part         INTEGER NOT NULL,
    committed    INTEGER NOT NULL,
    leader_epoch INTEGER NOT NULL,
    metadata     TEXT    NOT NULL,
    commit_time  INTEGER NOT NULL,
    PRIMARY KEY (group_id, topic, part)
) WITHOUT ROWID;

CREATE TABLE groups (
    group_id      TEXT    PRIMARY KEY,
    protocol_type TEXT    NOT NULL,
    state_name    TEXT    NOT NULL,
    empty         INTEGER NOT NULL,
    state         BLOB,
    updated_at    INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE coordinator_leases (
    name       TEXT    PRIMARY KEY,
    owner      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    epoch      INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX coordinator_leases_owner ON coordinator_leases (owner);
