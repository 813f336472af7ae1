-- 0009: Kafka ACLs (CreateAcls, DescribeAcls, DeleteAcls, `floe acl`), one
-- row per binding of an access control entry to a resource pattern, the
-- numbers of Kafka's enums as the wire protocol carries them; and the ACL
-- version, one row bumped in the transaction of every change, which agents
-- poll to know when to reload the ACLs they cache.

CREATE TABLE acls (
    resource_type smallint NOT NULL,
    resource_name text     NOT NULL,
    pattern_type  smallint NOT NULL,
    principal     text     NOT NULL,
    host          text     NOT NULL,
    operation     smallint NOT NULL,
    permission    smallint NOT NULL,
    PRIMARY KEY (resource_type, resource_name, pattern_type, principal, host, operation, permission)
);

CREATE TABLE acl_version (
    id      smallint PRIMARY KEY CHECK (id = 1),
    version bigint   NOT NULL
);

INSERT INTO acl_version (id, version) VALUES (1, 0);
