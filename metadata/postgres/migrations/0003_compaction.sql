-- 0003: compaction. Objects get a level (0 = written by a flush, n+1 =
-- merged from level n) and the time after which a replaced object may be
-- deleted from the bucket; compactor jobs are leased.

ALTER TABLE objects
    ADD COLUMN level        integer     NOT NULL DEFAULT 0,
    ADD COLUMN delete_after timestamptz;

-- The planner lists live objects oldest first; GC lists replaced ones.
CREATE INDEX objects_state_created ON objects (state, created_at, key);

CREATE TABLE compactor_leases (
    name       text        PRIMARY KEY,
    owner      text        NOT NULL,
    expires_at timestamptz NOT NULL
);
