-- 0005: transactions. Coordinator records per transactional id; per
-- partition the producers' open transactions (checked in the commit
-- transaction; the oldest first_offset is the last stable offset); aborted
-- transactions for read_committed fetches; transactional offset commits
-- waiting for their transaction to commit. Times are unix ms.

CREATE TABLE transactions (
    txn_id      TEXT    PRIMARY KEY,
    producer_id INTEGER NOT NULL,
    epoch       INTEGER NOT NULL,
    timed_out_epoch INTEGER NOT NULL,
    state       TEXT    NOT NULL,
    timeout_ms  INTEGER NOT NULL,
    -- JSON: {"partitions": [[topic, part], ...], "groups": [...]}
    members     TEXT    NOT NULL,
    started_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE txn_partitions (
    topic_id     BLOB    NOT NULL,
    part         INTEGER NOT NULL,
    producer_id  INTEGER NOT NULL,
    epoch        INTEGER NOT NULL,
    -- NULL until the transaction's first batch lands here.
    first_offset INTEGER,
    PRIMARY KEY (topic_id, part, producer_id),
    FOREIGN KEY (topic_id, part) REFERENCES partitions (topic_id, part) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE txn_aborted (
    topic_id     BLOB    NOT NULL,
    part         INTEGER NOT NULL,
    first_offset INTEGER NOT NULL,
    producer_id  INTEGER NOT NULL,
    last_offset  INTEGER NOT NULL,
    PRIMARY KEY (topic_id, part, first_offset, producer_id),
    FOREIGN KEY (topic_id, part) REFERENCES partitions (topic_id, part) ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TABLE txn_offsets (
    txn_id       TEXT    NOT NULL,
    group_id     TEXT    NOT NULL,
    topic        TEXT    NOT NULL,
    part         INTEGER NOT NULL,
    committed    INTEGER NOT NULL,
    leader_epoch INTEGER NOT NULL,
    metadata     TEXT    NOT NULL,
    PRIMARY KEY (txn_id, group_id, topic, part)
) WITHOUT ROWID;
