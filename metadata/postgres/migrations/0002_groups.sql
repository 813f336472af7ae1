-- 0002: consumer groups (committed offsets, coordinator state) and the
-- leases that make one agent a group's coordinator. Times come from now().

CREATE TABLE group_offsets (
    group_id     text        NOT NULL,
    topic        text        NOT NULL,
    part         integer     NOT NULL,
    committed    bigint      NOT NULL,
    leader_epoch integer     NOT NULL,
    metadata     bytea       NOT NULL, -- Kafka strings may hold NUL, which text cannot
    commit_time  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (group_id, topic, part)
);

CREATE TABLE groups (
    group_id      text        PRIMARY KEY,
    protocol_type text        NOT NULL,
    state_name    text        NOT NULL,
    empty         boolean     NOT NULL,
    state         bytea,
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE coordinator_leases (
    name       text        PRIMARY KEY,
    owner      text        NOT NULL,
    expires_at timestamptz NOT NULL,
    epoch      bigint      NOT NULL
);

CREATE INDEX coordinator_leases_owner ON coordinator_leases (owner);
