-- 0005: transactions. Coordinator records per transactional id; per
-- partition the producers' open transactions (checked in the commit
-- transaction; the oldest first_offset is the last stable offset); aborted
-- transactions for read_committed fetches; transactional offset commits
-- waiting for their transaction to commit.

CREATE TABLE transactions (
    txn_id      text        PRIMARY KEY,
    producer_id bigint      NOT NULL,
    epoch       smallint    NOT NULL,
    timed_out_epoch smallint NOT NULL,
    state       text        NOT NULL,
    timeout_ms  bigint      NOT NULL,
    -- JSON: {"partitions": [[topic, part], ...], "groups": [...]}
    members     text        NOT NULL,
    started_at  bigint      NOT NULL, -- unix ms, 0 when none is ongoing
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE txn_partitions (
    topic_id     bytea    NOT NULL,
    part         integer  NOT NULL,
    producer_id  bigint   NOT NULL,
    epoch        smallint NOT NULL,
    -- NULL until the transaction's first batch lands here.
    first_offset bigint,
    PRIMARY KEY (topic_id, part, producer_id),
    FOREIGN KEY (topic_id, part) REFERENCES partitions (topic_id, part) ON DELETE CASCADE
);

CREATE TABLE txn_aborted (
    topic_id     bytea   NOT NULL,
    part         integer NOT NULL,
    first_offset bigint  NOT NULL,
    producer_id  bigint  NOT NULL,
    last_offset  bigint  NOT NULL,
    PRIMARY KEY (topic_id, part, first_offset, producer_id),
    FOREIGN KEY (topic_id, part) REFERENCES partitions (topic_id, part) ON DELETE CASCADE
);

CREATE TABLE txn_offsets (
    txn_id       text    NOT NULL,
    group_id     text    NOT NULL,
    topic        text    NOT NULL,
    part         integer NOT NULL,
    committed    bigint  NOT NULL,
    leader_epoch integer NOT NULL,
    metadata     text    NOT NULL,
    PRIMARY KEY (txn_id, group_id, topic, part)
);
