package agent

import "floe/kafkaproto"

// APIVersions returns every Kafka API the agent serves, sorted by key, with
// the versions it advertises and the versions it handles: the registrations
// each NN_*.go file makes in its init. docs/compatibility.md's API table is
// generated from it (go run ./cmd/docgen), so the table cannot drift from
// what ApiVersions answers.
func APIVersions() []kafkaproto.Versions { return apis.All() }
