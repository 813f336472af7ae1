package checker

import (
	"sort"
	"time"

	"floe/proof/history"
)

// Class names an anomaly class, spelled as Jepsen's checker spells it.
type Class string

// The anomaly classes of Jepsen's Kafka checker.
const (
	// Duplicate: one value at more than one offset of a key.
	Duplicate Class = "duplicate"
	// InconsistentOffsets: sends and polls disagree on the value at an offset.
	InconsistentOffsets Class = "inconsistent-offsets"
	// LostWrite: a committed send at or below the highest offset some ok op
	// read, which no ok op read.
	LostWrite Class = "lost-write"
	// G1a: an ok op read a value whose send failed (an aborted read).
	G1a Class = "G1a"
	// PrecommittedRead: an op read a value it sent itself, before it could
	// have committed.
	PrecommittedRead Class = "precommitted-read"
	// NoWriterOfValue: an op polled a value that no op sent (Jepsen's
	// checker stops with this error type; here it is one more class, and a
	// failure). A broker that invents or replays records shows here, and so
	// do topics left over from another run.
	NoWriterOfValue Class = "no-writer-of-value"
	// PollSkip: a process's poll started past the value that follows its
	// previous poll's last value of a key.
	PollSkip Class = "poll-skip"
	// NonmonotonicPoll: a process's poll started at or before its previous
	// poll's last value of a key.
	NonmonotonicPoll Class = "nonmonotonic-poll"
	// NonmonotonicSend: a process's send landed at or before its previous
	// send to the same key.
	NonmonotonicSend Class = "nonmonotonic-send"
	// IntPollSkip: two successive reads of a key inside one op skip values.
	IntPollSkip Class = "int-poll-skip"
	// IntNonmonotonicPoll: two successive reads of a key inside one op go
	// backwards or repeat.
	IntNonmonotonicPoll Class = "int-nonmonotonic-poll"
	// IntSendSkip: two successive sends to a key inside one op are not
	// adjacent in the key's order (another producer's value lies between).
	IntSendSkip Class = "int-send-skip"
	// IntNonmonotonicSend: two successive sends to a key inside one op land
	// out of order.
	IntNonmonotonicSend Class = "int-nonmonotonic-send"
	// Unseen: values sent by ok ops that no ok op ever polled.
	Unseen Class = "unseen"

	// G0: a cycle of write-write dependencies.
	G0 Class = "G0"
	// G0Process: a G0 cycle that needs process-order edges.
	G0Process Class = "G0-process"
	// G0Realtime: a G0 cycle that needs real-time edges.
	G0Realtime Class = "G0-realtime"
	// G1c: a cycle of write-read (and, with WWDeps, write-write)
	// dependencies with at least one write-read edge: circular information
	// flow.
	G1c Class = "G1c"
	// G1cProcess: a G1c cycle that needs process-order edges.
	G1cProcess Class = "G1c-process"
	// G1cRealtime: a G1c cycle that needs real-time edges.
	G1cRealtime Class = "G1c-realtime"

	// CycleSearchTimeout: the search of a strongly connected component ran
	// out of time before every cycle class was looked for; cycles may be
	// missing from the result, so it counts as a failure.
	CycleSearchTimeout Class = "cycle-search-timeout"
)

// Classes lists every class in report order.
var Classes = []Class{
	Duplicate, InconsistentOffsets, LostWrite, G1a, PrecommittedRead, NoWriterOfValue,
	PollSkip, NonmonotonicPoll, NonmonotonicSend,
	IntPollSkip, IntNonmonotonicPoll, IntSendSkip, IntNonmonotonicSend,
	Unseen,
	G0, G0Process, G0Realtime, G1c, G1cProcess, G1cRealtime,
	CycleSearchTimeout,
}

// Options tune the check. The zero value is Jepsen's default.
type Options struct {
	// WWDeps lets write-write edges take part in G1c cycles, as Jepsen's
	// :ww-deps does. Kafka does not isolate a transaction's writes, so such
	// cycles (t0 <ww t1 <wr t0) are normal and the G1c classes join the
	// allowed set. Without it (the default) G1c cycles are made of
	// write-read edges, plus process or real-time order, and count as
	// failures. G0 cycles are searched for and reported either way (always
	// allowed).
	WWDeps bool
	// Allow adds classes to the allowed set.
	Allow []Class
	// CycleSearchTimeout bounds the search of each strongly connected
	// component (Elle's default of one second if zero).
	CycleSearchTimeout time.Duration
	// MaxAnomalies caps the anomalies kept per class (1000 if zero); counts
	// stay exact.
	MaxAnomalies int
}

// AllowedClasses returns the classes reported but not counted as failures,
// as Jepsen's allowed-error-types does:
//   - int-send-skip and the G0 classes always: a Kafka transaction's writes
//     interleave with other producers' writes;
//   - poll-skip and nonmonotonic-poll when the history subscribes through a
//     consumer group: a rebalance moves a partition to a consumer that starts
//     from the group's committed offset;
//   - the G1c classes with WWDeps (see Options.WWDeps);
//   - and opts.Allow.
func AllowedClasses(h history.History, opts Options) []Class {
	set := map[Class]bool{IntSendSkip: true, G0: true, G0Process: true, G0Realtime: true}
	for i := range h {
		if h[i].F == history.Subscribe {
			set[PollSkip], set[NonmonotonicPoll] = true, true
			break
		}
	}
	if opts.WWDeps {
		set[G1c], set[G1cProcess], set[G1cRealtime] = true, true, true
	}
	for _, c := range opts.Allow {
		set[c] = true
	}
	return sortedClasses(set)
}

func sortedClasses(set map[Class]bool) []Class {
	out := make([]Class, 0, len(set))
	known := map[Class]bool{}
	for _, c := range Classes {
		known[c] = true
		if set[c] {
			out = append(out, c)
		}
	}
	var extra []Class // classes added through Allow that the checker never reports
	for c := range set {
		if !known[c] {
			extra = append(extra, c)
		}
	}
	sort.Slice(extra, func(i, j int) bool { return extra[i] < extra[j] })
	return append(out, extra...)
}

// Anomaly is one instance of a class, with the operations (history indexes)
// that show it. Which fields are set depends on the class.
type Anomaly struct {
	// Ops are the offending ops: the writer and the reader, the two polls of
	// a skip, the ops of a cycle in order.
	Ops []int `json:"ops"`
	// Key is the key concerned (absent for cycles and timeouts).
	Key *history.Key `json:"key,omitempty"`
	// Values are the values concerned: the pair of a skip or inversion, the
	// conflicting values of an offset, the unseen values (first few).
	Values []int64 `json:"values,omitempty"`
	// Offsets are the offsets concerned.
	Offsets []int64 `json:"offsets,omitempty"`
	// Delta is the distance in the version order of a skip or inversion.
	Delta int `json:"delta,omitempty"`
	// Skipped are the values a skip passed over.
	Skipped []int64 `json:"skipped,omitempty"`
	// Count is how many values an unseen anomaly stands for, or the size of
	// the component of a cycle-search timeout.
	Count int `json:"count,omitempty"`
	// Steps explain a cycle edge by edge.
	Steps []Step `json:"steps,omitempty"`
}

// Step is one edge of a cycle: From must precede To because of Rel.
type Step struct {
	From int    `json:"from"`
	To   int    `json:"to"`
	Rel  string `json:"rel"`
	// Key and Value explain ww and wr edges: for ww, From sent Value and To
	// sent Value2, the next value of Key; for wr, To read the Value From sent.
	Key    history.Key `json:"key,omitempty"`
	Value  int64       `json:"value,omitempty"`
	Value2 int64       `json:"value2,omitempty"`
}

// Stats are simple facts about the history.
type Stats struct {
	Ops       int                  `json:"ops"`
	OpsByType map[history.Type]int `json:"ops_by_type"`
	OpsByF    map[history.F]int    `json:"ops_by_f"`
	// MaxOffset is the highest offset seen per key, sent or polled.
	MaxOffset map[history.Key]int64 `json:"max_offset"`
	// Unseen is the number of values per key sent by ok ops and never
	// polled by one (keys with none left out).
	Unseen map[history.Key]int `json:"unseen,omitempty"`
	// SCCs is the number of strongly connected components with a cycle;
	// LargestSCC the ops in the largest.
	SCCs       int `json:"sccs"`
	LargestSCC int `json:"largest_scc"`
	// WorstRealtimeLag is the largest of RealtimeLags (nil without polls).
	WorstRealtimeLag *Lag `json:"worst_realtime_lag,omitempty"`
}

// Result is the verdict on a history.
type Result struct {
	// Valid is true when no class outside Allowed was found.
	Valid bool `json:"valid"`
	// Found lists the classes found, Bad those of them not allowed.
	Found []Class `json:"found"`
	Bad   []Class `json:"bad"`
	// Allowed is the allowed set this check used.
	Allowed []Class `json:"allowed"`
	// Counts is the exact number of anomalies per class found.
	Counts map[Class]int `json:"counts"`
	// Anomalies are the anomalies per class, at most Options.MaxAnomalies
	// each.
	Anomalies map[Class][]Anomaly `json:"anomalies"`
	Stats     Stats               `json:"stats"`
}
