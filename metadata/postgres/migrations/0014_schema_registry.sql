-- 0014: the schema registry (package schemaregistry, metadata/schemas.go):
-- schemas by global id, the versions of each subject, the references of
-- each schema (for referencedby and the rule that a referenced version is
-- not deleted), the registry's and subjects' compatibility and mode, and
-- one row whose lock every registry write takes first and whose counter
-- allocates ids.

CREATE TABLE sr_schemas (
    id          bigint PRIMARY KEY,
    schema_type text   NOT NULL,
    schema      text   NOT NULL,
    metadata    text   NOT NULL,
    rule_set    text   NOT NULL,
    fingerprint text   NOT NULL
);

CREATE INDEX sr_schemas_fingerprint ON sr_schemas (fingerprint, id);

CREATE TABLE sr_references (
    schema_id   bigint  NOT NULL,
    position    integer NOT NULL,
    name        text    NOT NULL,
    ref_subject text    NOT NULL,
    ref_version integer NOT NULL,
    PRIMARY KEY (schema_id, position)
);

CREATE INDEX sr_references_target ON sr_references (ref_subject, ref_version);

CREATE TABLE sr_versions (
    subject   text    NOT NULL,
    version   integer NOT NULL,
    schema_id bigint  NOT NULL,
    deleted   boolean NOT NULL,
    PRIMARY KEY (subject, version)
);

CREATE INDEX sr_versions_schema ON sr_versions (schema_id);

CREATE TABLE sr_configs (
    subject       text    PRIMARY KEY,
    compatibility text    NOT NULL,
    normalize     boolean NOT NULL
);

CREATE TABLE sr_modes (
    subject text PRIMARY KEY,
    mode    text NOT NULL
);

CREATE TABLE sr_registry (
    id      smallint PRIMARY KEY CHECK (id = 1),
    next_id bigint   NOT NULL,
    writes  bigint   NOT NULL
);

INSERT INTO sr_registry (id, next_id, writes) VALUES (1, 1, 0);
