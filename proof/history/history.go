package history

import (
	"errors"
	"fmt"
	"slices"
)

// Type is an operation's outcome.
type Type string

// The outcomes of an operation.
const (
	// OK: the operation took effect, and every value it reports is true.
	OK Type = "ok"
	// Fail: the operation certainly took no effect (an aborted transaction,
	// a send the broker rejected).
	Fail Type = "fail"
	// Info: the outcome is unknown (a timeout, a lost connection); the
	// operation may take effect at any time after its invocation.
	Info Type = "info"
)

// F is what an operation does.
type F string

// The kinds of operation.
const (
	// Txn is a general transaction of sends and polls.
	Txn F = "txn"
	// Send is an operation made only of sends.
	Send F = "send"
	// Poll is an operation made only of polls.
	Poll F = "poll"
	// Assign replaces the process's partitions by Keys, chosen by the client.
	Assign F = "assign"
	// Subscribe replaces the process's subscription by the topics of Keys;
	// the consumer group chooses the partitions.
	Subscribe F = "subscribe"
	// Crash tears the process's client down; it is always Info.
	Crash F = "crash"
)

// MopF is what a micro-operation does.
type MopF string

// The kinds of micro-operation.
const (
	MopSend MopF = "send"
	MopPoll MopF = "poll"
)

// Key names one (topic, partition); the workload maps keys to partitions one
// to one.
type Key int

// UnknownOffset is the offset of a send whose offset the client never learnt.
const UnknownOffset int64 = -1

// Pair is one record read by a poll: its offset in the key's partition and its
// value.
type Pair struct {
	Offset int64
	Value  int64
}

// Mop is a micro-operation: a send of Value to Key (completed with Offset,
// or UnknownOffset), or a poll (completed with Polls, the records read per
// key in the order the consumer returned them).
type Mop struct {
	F      MopF
	Key    Key
	Value  int64
	Offset int64
	Polls  map[Key][]Pair
}

// Op is one completed operation of a history.
type Op struct {
	// Index is the op's position in its History.
	Index   int
	Process int
	Type    Type
	F       F
	// Invoke and Complete are monotonic nanoseconds from the run's clock.
	// An Info op's Complete is when the client gave up, not when the
	// operation took effect.
	Invoke   int64
	Complete int64
	// Mops is the transaction of a Txn, Send or Poll op.
	Mops []Mop
	// Keys are the partitions of an Assign or the topics' keys of a
	// Subscribe.
	Keys []Key
	// SeekToBeginning: an Assign that also rewinds every assigned partition.
	SeekToBeginning bool
	// Rebalanced are the keys whose assignment changed while the op ran; the
	// checker expects no internal contiguity for them.
	Rebalanced []Key
	// Error is the client's error, for Fail and Info ops.
	Error string
}

// History is a list of operations, indexed by position, in completion order.
type History []Op

// SendMop is a send of v to k whose offset is not known (yet).
func SendMop(k Key, v int64) Mop {
	return Mop{F: MopSend, Key: k, Value: v, Offset: UnknownOffset}
}

// SendAt is a send of v to k completed at offset off.
func SendAt(k Key, off, v int64) Mop {
	return Mop{F: MopSend, Key: k, Value: v, Offset: off}
}

// PollMop is a poll completed with polls (nil for a poll not completed).
func PollMop(polls map[Key][]Pair) Mop {
	return Mop{F: MopPoll, Polls: polls}
}

// IsTxn reports whether the op carries a transaction of micro-ops.
func (o *Op) IsTxn() bool {
	return o.F == Txn || o.F == Send || o.F == Poll
}

// Reindex sets each op's Index to its position.
func (h History) Reindex() {
	for i := range h {
		h[i].Index = i
	}
}

// ErrInvalid is wrapped by every error of Validate.
var ErrInvalid = errors.New("invalid history")

// Validate checks that h is a history the checker can judge: indexes are
// positions, types and kinds are known, times are ordered, micro-ops fit
// their op's kind, offsets are not negative (except a send's unknown offset),
// and no process has two operations in flight at once.
func (h History) Validate() error {
	type span struct{ inv, comp int64 }
	last := map[int]span{}
	for i := range h {
		o := &h[i]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: op %d: %s", ErrInvalid, i, fmt.Sprintf(format, args...))
		}
		if o.Index != i {
			return bad("index %d", o.Index)
		}
		switch o.Type {
		case OK, Fail, Info:
		default:
			return bad("type %q", o.Type)
		}
		if o.Complete < o.Invoke {
			return bad("completes at %d before its invocation at %d", o.Complete, o.Invoke)
		}
		switch o.F {
		case Txn, Send, Poll:
			for j, m := range o.Mops {
				switch m.F {
				case MopSend:
					if o.F == Poll {
						return bad("mop %d: send in a poll op", j)
					}
					if m.Offset < UnknownOffset {
						return bad("mop %d: offset %d", j, m.Offset)
					}
				case MopPoll:
					if o.F == Send {
						return bad("mop %d: poll in a send op", j)
					}
					for k, ps := range m.Polls {
						for _, p := range ps {
							if p.Offset < 0 {
								return bad("mop %d: key %d: offset %d", j, k, p.Offset)
							}
						}
					}
				default:
					return bad("mop %d: kind %q", j, m.F)
				}
			}
		case Assign, Subscribe, Crash:
			if len(o.Mops) > 0 {
				return bad("%s op with micro-ops", o.F)
			}
		default:
			return bad("kind %q", o.F)
		}
		if prev, ok := last[o.Process]; ok && o.Invoke < prev.comp {
			return bad("process %d invoked at %d before its previous op completed at %d", o.Process, o.Invoke, prev.comp)
		}
		last[o.Process] = span{o.Invoke, o.Complete}
	}
	return nil
}

// SortedKeys returns the keys of m in increasing order, so that every walk
// over a poll's map is deterministic.
func SortedKeys[V any](m map[Key]V) []Key {
	ks := make([]Key, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
