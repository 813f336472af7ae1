-- 0010: Kafka client quotas (DescribeClientQuotas, AlterClientQuotas), one
-- row per entity and quota key. An entity has a user, a client id and an
-- ip part, each absent (kind 0), the type's default (kind 1) or named
-- (kind 2, the name in *_name; '' otherwise). And the quota version, one
-- row bumped in the transaction of every change, which agents poll to know
-- when to reload the quotas they enforce.

CREATE TABLE client_quotas (
    user_kind   INTEGER NOT NULL,
    user_name   TEXT    NOT NULL,
    client_kind INTEGER NOT NULL,
    client_name TEXT    NOT NULL,
    ip_kind     INTEGER NOT NULL,
    ip_name     TEXT    NOT NULL,
    quota_key   TEXT    NOT NULL,
    quota_value REAL    NOT NULL,
    PRIMARY KEY (user_kind, user_name, client_kind, client_name, ip_kind, ip_name, quota_key)
) WITHOUT ROWID;

CREATE TABLE quota_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);

INSERT INTO quota_version (id, version) VALUES (1, 0);
