// Command proof runs floe's Jepsen-style proof on this machine and writes
// its report: it starts PostgreSQL and MinIO, several `floe agent`s (each in
// a network namespace of its own) and a `floe compactor`; runs
// proof/workload against the agents while proof/nemesis injects faults; heals
// everything and lets the cluster settle before the workload's final reads;
// checks the history with proof/checker; reads the topics' Iceberg tables
// through an agent's REST catalog and compares them with the history; and
// writes result.json, history.jsonl.gz, latency.svg and README.md under -out.
//
// It needs root (network namespaces), ip, iptables and tc, PostgreSQL's
// server binaries and MinIO ($FLOE_MINIO_BIN): `make proof` has them. The
// seed (-seed) is printed and kept in the report so that a run's choices
// replay. Exit status: 0 valid, 1 anomalies found, 2 the run itself failed.
//
// Files: main.go (flags, the run), cluster.go (the processes), iceberg.go
// (the tables as one more reader), report.go (the report).
package main
