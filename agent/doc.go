// Package agent is floe's Kafka-facing server. An Agent accepts Kafka
// connections, answers each API in its own file (named by API key), batches
// the records produced to all partitions into one pending object that is
// flushed with one PUT and one metadata commit, serves fetches from stored
// objects through the read cache, and exposes /metrics, /healthz and /readyz
// over HTTP.
//
// An agent owns no partition and no disk: every durable fact lives in the
// metadata store or the bucket, so any agent can serve any request and a lost
// agent loses nothing that was acknowledged. The agent must never answer a
// produce before both the object PUT and its metadata commit have succeeded.
package agent
