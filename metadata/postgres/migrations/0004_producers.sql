-- Idempotent producers: ids handed out by InitProducerId, and per partition
-- the last batches of each producer, checked in the commit transaction.
CREATE TABLE producer_ids (
    producer_id bigserial   PRIMARY KEY,
    epoch       smallint    NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE producer_state (
    topic_id    bytea       NOT NULL,
    part        integer     NOT NULL,
    producer_id bigint      NOT NULL,
    epoch       smallint    NOT NULL,
    -- JSON array of [first_seq, last_seq, base_offset], oldest first.
    batches     text        NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic_id, part, producer_id),
    FOREIGN KEY (topic_id, part) REFERENCES partitions (topic_id, part) ON DELETE CASCADE
);
