// Package nemesis injects the faults of floe's Kafka proof into real
// processes on this machine, each fault with its inverse (heal), and logs
// what it did on a timeline.
//
// Rooms:
//   - net.go: the network. A hub namespace holds a bridge; the root
//     namespace (where PostgreSQL, MinIO, the compactor and the clients run)
//     and each agent's namespace join it with a veth pair, addressed in a
//     10.x.y.0/24 used only there: no traffic leaves the machine. Faults are
//     iptables rules (and tc netem qdiscs where the kernel has netem) inside
//     an agent's namespace. Everything is named with a per-run prefix holding
//     the runner's pid, and CleanStale removes what dead runs left behind.
//   - proc.go: processes the nemesis may kill (-9), restart, pause (SIGSTOP)
//     and resume (SIGCONT).
//   - nemesis.go: the fault kinds, a random schedule from a seed (one fault
//     at a time, held then healed), and the timeline.
//
// Clock skew is not a fault here: floe's PostgreSQL store takes every lease,
// heartbeat and expiry time from the database's now(), and an agent's own
// trust in a lease is measured on Go's monotonic clock; libfaketime cannot
// reach a Go binary anyway (Go reads the clock through the vDSO, not libc).
//
// The package never judges a history and never starts the workload; the
// runner (proof/cmd/proof) does.
package nemesis
