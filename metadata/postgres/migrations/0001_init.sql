-- 0001: topics, partitions, the object index, objects, agents, counters, and
-- floe_commit_object, the one-round-trip commit of a flushed object.

CREATE TABLE topics (
    id         bytea       PRIMARY KEY CHECK (length(id) = 16),
    name       text        NOT NULL UNIQUE,
    partitions integer     NOT NULL,
    configs    jsonb       NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE partitions (
    topic_id         bytea   NOT NULL REFERENCES topics (id) ON DELETE CASCADE,
    part             integer NOT NULL,
    next_offset      bigint  NOT NULL DEFAULT 0,
    log_start_offset bigint  NOT NULL DEFAULT 0,
    max_timestamp    bigint  NOT NULL DEFAULT -1,
    PRIMARY KEY (topic_id, part)
);

CREATE TABLE objects (
    key        text        PRIMARY KEY,
    size       bigint      NOT NULL,
    agent_id   text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    state      text        NOT NULL DEFAULT 'live'
);

-- One row per (object, partition) run covering offsets [base_offset, end_offset).
CREATE TABLE object_index (
    topic_id    bytea   NOT NULL,
    part        integer NOT NULL,
    base_offset bigint  NOT NULL,
    end_offset  bigint  NOT NULL,
    object_key  text    NOT NULL,
    byte_offset bigint  NOT NULL,
    byte_length bigint  NOT NULL,
    batches     integer NOT NULL,
    min_ts      bigint  NOT NULL,
    max_ts      bigint  NOT NULL,
    PRIMARY KEY (topic_id, part, base_offset)
);

-- The compactor finds an object's runs by key.
CREATE INDEX object_index_object_key ON object_index (object_key);

CREATE TABLE agents (
    id             text        PRIMARY KEY,
    node_id        integer     NOT NULL UNIQUE,
    host           text        NOT NULL,
    port           integer     NOT NULL,
    zone           text        NOT NULL,
    last_heartbeat timestamptz NOT NULL
);

-- Counters are sharded: a single row would serialize every commit of every
-- agent behind one row lock held until the commit record is flushed.
-- A counter's value is the sum of its shards.
CREATE TABLE counters (
    name  text    NOT NULL,
    shard integer NOT NULL,
    value bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (name, shard)
);

INSERT INTO counters (name, shard) SELECT 'commits', g FROM generate_series(0, 15) g;

-- floe_commit_object commits one flushed object. Called as a single
-- statement in autocommit mode it is one transaction and one round trip.
-- The runs arrive as parallel arrays (run i = element i of each). It returns
-- one row per run, in run order, with the run's base offset, or NULL when the
-- run's topic/partition does not exist (the run is then skipped).
CREATE FUNCTION floe_commit_object(
    p_key text, p_size bigint, p_agent text, p_shard integer,
    p_topics bytea[], p_parts integer[],
    p_byte_offsets bigint[], p_byte_lengths bigint[], p_batches integer[], p_records bigint[],
    p_min_ts bigint[], p_max_ts bigint[])
RETURNS TABLE (o_run bigint, o_base bigint)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    -- Lock every touched partition row in (topic, partition) order, so that
    -- commits over overlapping partitions queue instead of deadlocking. The
    -- statements below take fresh snapshots (READ COMMITTED), so they see
    -- the offsets left by whichever commit held a lock before us.
    PERFORM 1 FROM partitions p
     WHERE (p.topic_id, p.part) IN (SELECT u.t, u.q FROM unnest(p_topics, p_parts) AS u(t, q))
     ORDER BY p.topic_id, p.part
       FOR UPDATE OF p;

    INSERT INTO objects (key, size, agent_id) VALUES (p_key, p_size, p_agent);

    RETURN QUERY
    WITH runs AS (
        SELECT u.* FROM unnest(p_topics, p_parts, p_byte_offsets, p_byte_lengths, p_batches, p_records, p_min_ts, p_max_ts)
               WITH ORDINALITY AS u(topic_id, part, byte_offset, byte_length, batches, records, min_ts, max_ts, run)
    ),
    -- Several runs of one partition get consecutive offsets in run order.
    placed AS (
        SELECT r.*, (p.next_offset + sum(r.records) OVER w - r.records)::bigint AS base
          FROM runs r
          JOIN partitions p ON p.topic_id = r.topic_id AND p.part = r.part
        WINDOW w AS (PARTITION BY r.topic_id, r.part ORDER BY r.run)
    ),
    advanced AS (
        UPDATE partitions p
           SET next_offset = p.next_offset + a.total,
               max_timestamp = greatest(p.max_timestamp, a.max_ts)
          FROM (SELECT topic_id, part, sum(records)::bigint AS total, max(max_ts) AS max_ts
                  FROM runs GROUP BY topic_id, part) a
         WHERE p.topic_id = a.topic_id AND p.part = a.part
    ),
    indexed AS (
        INSERT INTO object_index (topic_id, part, base_offset, end_offset, object_key,
                                  byte_offset, byte_length, batches, min_ts, max_ts)
        SELECT topic_id, part, base, base + records, p_key, byte_offset, byte_length, batches, min_ts, max_ts
          FROM placed
    )
    SELECT r.run, pl.base FROM runs r LEFT JOIN placed pl ON pl.run = r.run ORDER BY r.run;

    -- Last, so the shared counter row is locked for the shortest time.
    UPDATE counters SET value = value + 1 WHERE name = 'commits' AND shard = p_shard;
END
$$;
