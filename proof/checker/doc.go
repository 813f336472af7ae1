// Package checker judges a proof/history.History the way Jepsen's Kafka
// checker (jepsen.tests.kafka, with Elle for cycles) does, and reports every
// anomaly it finds with the operations that show it.
//
// Rooms:
//   - result.go: the anomaly classes, Options, the allowed-by-default set,
//     Result and Anomaly.
//   - analysis.go: one pass over the history into per-op reads and writes,
//     writers and readers of each value, and the per-key version orders
//     (offset → values) with their inconsistent-offsets and duplicates.
//   - cases.go: the classes found by walking ops and processes: G1a,
//     precommitted-read, no-writer-of-value, lost-write, the internal and external poll and
//     send orders, unseen.
//   - cycles.go: the dependency graph (ww, wr, process, realtime), Tarjan's
//     strongly connected components, and the bounded search for G0 and G1c
//     cycles and their -process and -realtime variants.
//   - lag.go: Jepsen's realtime lag of each poll.
//   - markdown.go: the human report.
//
// The version order of a key is built from every poll (of ok, info and fail
// ops alike: read_committed polls must never show unsafe data) and from the
// sends of ops that must have committed (ok, or info with a send that an ok op
// read). Offsets are then dropped: the dense index of a value in its key's
// order is what skips, inversions and dependencies are measured in, since
// transaction markers take offsets no client sees.
//
// Where it departs from Jepsen's checker, and why:
//   - No rw (anti-dependency) edges. Jepsen's docstring describes them for a
//     transaction's final read of a key, but its code leaves the rw graph
//     out: a poll returns a bounded prefix, so the last value polled does not
//     prove that the next one did not exist yet. Hence no G-single or G2.
//   - wr edges run from a value's writer to every op that polled it, as
//     Jepsen's code does (its docstring says only the highest read).
//   - G0 cycles are searched for with ww edges always (they are always
//     allowed); Options.WWDeps decides whether ww edges may also close G1c
//     cycles, where Jepsen's :ww-deps adds them to the graph for both.
//   - Process-order edges are in the graph, so that the -process classes
//     exist; Jepsen's Kafka checker asks Elle for strict serializability,
//     which adds only real-time edges, so a cycle it names -realtime may be
//     named -process here (the same verdict: G0 allowed, G1c not).
//   - A poll that returned no records for a key does not move its process's
//     position on that key; an assign does not reset nonmonotonic-send
//     tracking (Jepsen's does, though a consumer's assignment does not
//     order a producer's sends).
//   - A value polled that no op sent stops Jepsen's checker (it throws
//     :no-writer-of-value); here it is the class no-writer-of-value, and the
//     other classes skip that value.
//   - Jepsen's realtime lag is computed (RealtimeLags, and the worst in
//     Stats), not plotted; its consume counts are not computed.
//
// The checker is pure: no I/O, no clock except the cycle search's deadline,
// and it never panics on any history that history.Validate accepts.
package checker
