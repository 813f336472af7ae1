-- 0011: secrets the agents of one cluster share and nobody else knows (the
-- key agents sign their internal HTTP requests to each other with), made
-- once by the first agent that needs one: whoever can read this table can
-- read everything else in the store anyway.

CREATE TABLE cluster_secrets (
    name   TEXT NOT NULL PRIMARY KEY,
    secret BLOB NOT NULL
);
