package checker

import (
	"reflect"
	"testing"
)

// Jepsen's example: a process at offset 0 of x whose poll, invoked at 4,
// returns nothing, when offset 1 was known at 3, lags by 1; one that read the
// newest offset does not lag.
func TestRealtimeLags(t *testing.T) {
	h := hist(
		ok(0, 0, 1, send(x, 0, 1)),
		ok(1, 1, 2, poll(r(x, 0, 1))),
		ok(0, 2, 3, send(x, 1, 2)),
		ok(1, 4, 5, poll(r(x))),
		ok(2, 6, 7, poll(r(x, 0, 1, 1, 2), r(y))),
	)
	want := []Lag{
		{Op: 1, Process: 1, Key: x, Time: 1, Lag: 0},
		{Op: 3, Process: 1, Key: x, Time: 4, Lag: 1},
		{Op: 4, Process: 2, Key: x, Time: 6, Lag: 0},
		{Op: 4, Process: 2, Key: y, Time: 6, Lag: 0},
	}
	if got := RealtimeLags(h); !reflect.DeepEqual(got, want) {
		t.Fatalf("lags\n got %+v\nwant %+v", got, want)
	}
	// An empty poll of x invoked after offset 0 was known lags from then.
	h = hist(
		ok(0, 0, 10, send(x, 0, 1)),
		ok(1, 30, 31, poll(r(x))),
		ok(1, 40, 41, poll(r(x, 0, 1))),
	)
	if got := RealtimeLags(h); got[0].Lag != 20 || got[1].Lag != 0 {
		t.Fatalf("lags %+v", got)
	}
}
