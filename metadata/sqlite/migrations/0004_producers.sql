-- Idempotent producers: ids handed out by InitProducerId, and per partition
-- the last batches of each producer, checked in the commit transaction.
CREATE TABLE producer_ids (
    producer_id INTEGER PRIMARY KEY AUTOINCREMENT,
    epoch       INTEGER NOT NULL,
    created_at  INTEGER NOT NULL
);

CREATE TABLE producer_state (
    topic_id    BLOB    NOT NULL,
    part        INTEGER NOT NULL,
    producer_id INTEGER NOT NULL,
    epoch       INTEGER NOT NULL,
    -- JSON array of [first_seq, last_seq, base_offset], oldest first.
    batches     TEXT    NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (topic_id, part, producer_id),
    FOREIGN KEY (topic_id, part) REFERENCES partitions (topic_id, part) ON DELETE CASCADE
);
