-- 0009: Kafka ACLs (CreateAcls, DescribeAcls, DeleteAcls, `floe acl`), one
-- row per binding of an access control entry to a resource pattern, the
-- numbers of Kafka's enums as the wire protocol carries them; and the ACL
-- version, one row bumped in the transaction of every change, which agents
-- poll to know when to reload the ACLs they cache.

CREATE TABLE acls (
    resource_type INTEGER NOT NULL,
    resource_name TEXT    NOT NULL,
    pattern_type  INTEGER NOT NULL,
    principal     TEXT    NOT NULL,
    host          TEXT    NOT NULL,
    operation     INTEGER NOT NULL,
    permission    INTEGER NOT NULL,
    PRIMARY KEY (resource_type, resource_name, pattern_type, principal, host, operation, permission)
) WITHOUT ROWID;

CREATE TABLE acl_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);

INSERT INTO acl_version (id, version) VALUES (1, 0);
