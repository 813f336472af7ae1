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
//     precommitted-read, lost-write, the internal and external poll and
//     send orders, unseen.
//   - cycles.go: the dependency graph (ww, wr, process, realtime), Tarjan's
//     strongly connected components, and the bounded search for G0 and G1c
//     cycles and their -process and -realtime variants.
//   - markdown.go: the human report.
//
// The version order of a key is built from every poll (of ok, info and fail
// ops alike: read_committed polls must never show unsafe data) and from the
// sends of ops that must have committed (ok, or info with a send that an ok op
// read). Offsets are then dropped: the dense index of a value in its key's
// order is what skips, inversions and dependencies are measured in, since
// transaction markers take offsets no client sees.
//
// The checker is pure: no I/O, no clock except the cycle search's deadline,
// and it never panics on any history that history.Validate accepts.
package checker
