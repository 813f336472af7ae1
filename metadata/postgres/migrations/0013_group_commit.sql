-- 0013: floe_commit_objects, the commit of one or several flushed objects in
-- one statement (a group commit of one agent's concurrent flushes), with
-- the partition row locks held for less of it, and taken behind a queue
-- per topic (floe_lock_partitions) instead of in convoys. floe_commit_object
-- becomes the one-object case of it, for agents of an older release still
-- running.

-- floe_lock_partitions locks the partition rows (p_topics[i], p_parts[i])
-- for a commit and returns them. Commits of overlapping partitions must
-- take turns; how they queue decides what that costs. Row locks alone,
-- taken in (topic, partition) order, do not deadlock, but a commit waiting
-- for one row holds the rows it locked before it, so the commits of hot
-- partitions form convoys: with 128 committers on 64 shared partitions,
-- PostgreSQL spent 3.4 ms of CPU per commit in the lock waits, for 0.45
-- alone. So a commit first queues per topic, on a transaction advisory
-- lock (floe's class 0x666c6f65, "floe", and the topic id's first 4
-- bytes; topics that share them share a queue), taken in key order before
-- any row lock: the lock manager grants it to one waiter at a time, in
-- order, and the row locks after it are then free but for writers that do
-- not queue (an agent of an older release; admin statements). That
-- serialises a topic's commits even where their partitions are disjoint;
-- they run one after the other at the cost of the part of a commit spent
-- holding the lock.
CREATE FUNCTION floe_lock_partitions(p_topics bytea[], p_parts integer[])
RETURNS TABLE (topic_id bytea, part integer, next_offset bigint, max_timestamp bigint)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1718382437, k)
       FROM (SELECT DISTINCT ('x' || encode(substr(t, 1, 4), 'hex'))::bit(32)::integer AS k
               FROM unnest(p_topics) AS u(t) ORDER BY 1) s;
    -- The rows in (topic, partition) order. The statements after this
    -- function take fresh snapshots (READ COMMITTED), so they see the
    -- offsets left by whichever commit held a lock before.
    RETURN QUERY
    SELECT p.topic_id, p.part, p.next_offset, p.max_timestamp FROM partitions p
     WHERE (p.topic_id, p.part) IN (SELECT u.t, u.q FROM unnest(p_topics, p_parts) AS u(t, q))
     ORDER BY p.topic_id, p.part
       FOR UPDATE OF p;
END
$$;

-- floe_commit_objects commits the objects p_keys (with sizes p_sizes, of
-- agents p_agents) in one transaction. The runs of all objects arrive as
-- parallel arrays, object after object, each object's runs in its order;
-- p_objects[i] is the (1-based) object of run i. Runs of one partition get
-- consecutive offsets in that order, so an object committed after another
-- in the same call gets the later offsets. It returns one row per run, in
-- run order, with the run's base offset, or NULL when the run's partition
-- does not exist (the run is then skipped). The commits counter grows by
-- the number of objects: one per flush, however they were grouped.
CREATE FUNCTION floe_commit_objects(
    p_keys text[], p_sizes bigint[], p_agents text[], p_shard integer, p_objects integer[],
    p_topics bytea[], p_parts integer[],
    p_byte_offsets bigint[], p_byte_lengths bigint[], p_batches integer[], p_records bigint[],
    p_min_ts bigint[], p_max_ts bigint[])
RETURNS TABLE (o_run bigint, o_base bigint)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    -- Before any lock: the object rows are new (a duplicate key fails here,
    -- having held nothing), and every statement after the partition locks
    -- is time all other committers of those partitions wait for.
    INSERT INTO objects (key, size, agent_id) SELECT * FROM unnest(p_keys, p_sizes, p_agents);

    PERFORM 1 FROM floe_lock_partitions(p_topics, p_parts);

    -- One pass over the locked rows: advance each partition by its runs'
    -- records, and place the runs from the offset it had.
    RETURN QUERY
    WITH runs AS (
        SELECT u.* FROM unnest(p_objects, p_topics, p_parts, p_byte_offsets, p_byte_lengths, p_batches, p_records, p_min_ts, p_max_ts)
               WITH ORDINALITY AS u(obj, topic_id, part, byte_offset, byte_length, batches, records, min_ts, max_ts, run)
    ),
    advanced AS (
        UPDATE partitions p
           SET next_offset = p.next_offset + a.total,
               max_timestamp = greatest(p.max_timestamp, a.max_ts)
          FROM (SELECT topic_id, part, sum(records)::bigint AS total, max(max_ts) AS max_ts
                  FROM runs GROUP BY topic_id, part) a
         WHERE p.topic_id = a.topic_id AND p.part = a.part
        RETURNING p.topic_id, p.part, p.next_offset - a.total AS start
    ),
    placed AS (
        SELECT r.*, (ad.start + sum(r.records) OVER w - r.records)::bigint AS base
          FROM runs r
          JOIN advanced ad ON ad.topic_id = r.topic_id AND ad.part = r.part
        WINDOW w AS (PARTITION BY r.topic_id, r.part ORDER BY r.run)
    ),
    indexed AS (
        INSERT INTO object_index (topic_id, part, base_offset, end_offset, object_key,
                                  byte_offset, byte_length, batches, min_ts, max_ts)
        SELECT topic_id, part, base, base + records, p_keys[obj], byte_offset, byte_length, batches, min_ts, max_ts
          FROM placed
    )
    SELECT r.run, pl.base FROM runs r LEFT JOIN placed pl ON pl.run = r.run ORDER BY r.run;

    -- Last, so the shared counter row is locked for the shortest time.
    UPDATE counters SET value = value + cardinality(p_keys) WHERE name = 'commits' AND shard = p_shard;
END
$$;

CREATE OR REPLACE FUNCTION floe_commit_object(
    p_key text, p_size bigint, p_agent text, p_shard integer,
    p_topics bytea[], p_parts integer[],
    p_byte_offsets bigint[], p_byte_lengths bigint[], p_batches integer[], p_records bigint[],
    p_min_ts bigint[], p_max_ts bigint[])
RETURNS TABLE (o_run bigint, o_base bigint)
LANGUAGE sql VOLATILE AS $$
    SELECT * FROM floe_commit_objects(ARRAY[p_key], ARRAY[p_size], ARRAY[p_agent], p_shard,
        array_fill(1, ARRAY[cardinality(p_topics)]), p_topics, p_parts,
        p_byte_offsets, p_byte_lengths, p_batches, p_records, p_min_ts, p_max_ts)
$$;
