-- 0012: share groups (KIP-932). One row per share-partition (a share
-- group's view of one topic partition): the share-partition start offset
-- (SPSO) and the in-flight window after it as a JSON array of ranges
-- (metadata.ShareRange: first, last, state, delivery count, holder, lock
-- expiry in unix ms of the store clock). A ShareFetch or ShareAcknowledge
-- locks and rewrites the rows of its partitions in one transaction.

CREATE TABLE share_partitions (
    group_id     TEXT    NOT NULL,
    topic_id     BLOB    NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    part         INTEGER NOT NULL,
    start_offset INTEGER NOT NULL,
    state_epoch  INTEGER NOT NULL,
    ranges       TEXT    NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (group_id, topic_id, part)
) WITHOUT ROWID;

CREATE INDEX share_partitions_topic ON share_partitions (topic_id);
