// Package history owns the operation model of floe's Kafka proof: what a
// client did, when, and what it saw, in the shape of Jepsen's Kafka workload
// (jepsen.tests.kafka), and the JSON Lines encoding that keeps a run's history
// so that it can be checked again.
//
// A History is a list of completed operations. Each Op carries its invocation
// and completion time (monotonic nanoseconds from one clock per run), the
// process that ran it, its outcome (ok, fail, or info when the outcome is
// unknown, such as a timeout), and a transaction of micro-operations:
// sends of a unique integer value to a key, completed with the offset the
// broker gave it, and polls, completed with the (offset, value) pairs read
// for each key. Keys stand for (topic, partition) one to one; the workload owns
// that mapping. Assign, subscribe and crash operations change what a process
// polls, or replace its client.
//
// A process is sequential: it never has two operations in flight. After an
// info operation (or a crash) a process must not be reused: the workload gives
// the worker a fresh process id, as Jepsen does, because the old one may still
// be acting.
//
// This package never judges a history; proof/checker does.
package history
