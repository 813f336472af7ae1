// Package workload runs Jepsen's Kafka workload (jepsen.tests.kafka) against a
// Kafka bootstrap address with franz-go clients, and records what they did as
// a proof/history.History for proof/checker.
//
// Each worker is a sequential client of one of four kinds: assign (sends or
// polls of partitions it assigns itself), txn-assign (transactions that send
// and poll, some aborted on purpose), subscribe (polls through a consumer
// group, committing offsets after each poll) and txn-subscribe
// (read-process-write: a group transaction that polls, sends and commits its
// offsets). Producers are idempotent with acks=all; consumers read
// committed. Values are unique integers; keys map to (topic, partition) one to
// one (see Keys).
//
// Config.SaramaWorkers of the assign and subscribe workers use a sarama
// client (an idempotent SyncProducer with acks=all; a PartitionConsumer per
// key, or a ConsumerGroup of their own; read committed) instead of franz-go,
// so that the history mixes two client libraries; they record the same ops
// the franz-go workers do (sarama.go, sarama_group.go).
//
// A worker's process id changes after an op that failed or whose outcome is
// unknown, as in Jepsen: an unknown outcome also closes the client (a crash op)
// and opens a fresh one. Workers also crash at random (Config.CrashP, Jepsen's
// crash-clients), and assign workers reassign themselves a new set of keys
// at random (Config.ReassignP). When the run ends, a final reader assigns every
// partition from its start and polls until it has read past every offset an
// ok op saw, so that unseen values mean loss, not a reader left behind.
//
// The package starts no broker and injects no fault; the runner that owns
// the processes and the nemesis drives it.
package workload
