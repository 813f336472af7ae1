-- 0012: share groups (KIP-932). One row per share-partition (a share
-- group's view of one topic partition): the share-partition start offset
-- (SPSO) and the in-flight window after it as a JSON array of ranges
-- (metadata.ShareRange: first, last, state, delivery count, holder, lock
-- expiry in unix ms of the store clock). A ShareFetch or ShareAcknowledge
-- locks and rewrites the rows of its partitions in one transaction.

CREATE TABLE share_partitions (
    group_id     text        NOT NULL,
    topic_id     bytea       NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    part         integer     NOT NULL,
    start_offset bigint      NOT NULL,
    state_epoch  integer     NOT NULL,
    ranges       text        NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (group_id, topic_id, part)
);

CREATE INDEX share_partitions_topic ON share_partitions (topic_id);
