-- 0014: the schema registry (package schemaregistry, metadata/schemas.go):
-- schemas by global id, the versions of each subject, the references of
-- each schema (for referencedby and the rule that a referenced version is
-- not deleted), the registry's and subjects' compatibility and mode, and
-- one row whose lock every registry write takes first and whose counter
-- allocates ids.

CREATE TABLE sr_schemas (
    id          INTEGER PRIMARY KEY,
    schema_type TEXT    NOT NULL,
    schema      TEXT    NOT NULL,
    metadata    TEXT    NOT NULL,
    rule_set    TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL
);

CREATE INDEX sr_schemas_fingerprint ON sr_schemas (fingerprint, id);

CREATE TABLE sr_references (
    schema_id   INTEGER NOT NULL,
    position    INTEGER NOT NULL,
    name        TEXT    NOT NULL,
    ref_subject TEXT    NOT NULL,
    ref_version INTEGER NOT NULL,
    PRIMARY KEY (schema_id, position)
);

CREATE INDEX sr_references_target ON sr_references (ref_subject, ref_version);

CREATE TABLE sr_versions (
    subject   TEXT    NOT NULL,
    version   INTEGER NOT NULL,
    schema_id INTEGER NOT NULL,
    deleted   INTEGER NOT NULL,
    PRIMARY KEY (subject, version)
);

CREATE INDEX sr_versions_schema ON sr_versions (schema_id);

CREATE TABLE sr_configs (
    subject       TEXT    PRIMARY KEY,
    compatibility TEXT    NOT NULL,
    normalize     INTEGER NOT NULL
);

CREATE TABLE sr_modes (
    subject TEXT PRIMARY KEY,
    mode    TEXT NOT NULL
);

CREATE TABLE sr_registry (
    id      INTEGER  PRIMARY KEY CHECK (id = 1),
    next_id INTEGER  NOT NULL,
    writes  INTEGER  NOT NULL
);

INSERT INTO sr_registry (id, next_id, writes) VALUES (1, 1, 0);
