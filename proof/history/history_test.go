package history

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func sample() History {
	h := History{
		{Process: 0, Type: OK, F: Assign, Invoke: 1, Complete: 2, Keys: []Key{0, 1}, SeekToBeginning: true},
		{Process: 0, Type: OK, F: Txn, Invoke: 3, Complete: 9, Mops: []Mop{
			SendAt(0, 4, 17),
			PollMop(map[Key][]Pair{0: {{3, 12}, {4, 17}}, 1: {}}),
		}},
		{Process: 1, Type: Info, F: Send, Invoke: 4, Complete: 20, Mops: []Mop{SendMop(1, 5)}, Error: "timeout"},
		{Process: 2, Type: Fail, F: Poll, Invoke: 5, Complete: 21, Mops: []Mop{PollMop(nil)}, Error: "not leader"},
		{Process: 3, Type: Info, F: Crash, Invoke: 22, Complete: 22},
		{Process: 4, Type: OK, F: Subscribe, Invoke: 23, Complete: 24, Keys: []Key{1}, Rebalanced: []Key{1}},
	}
	h.Reindex()
	return h
}

func TestJSONRoundTrip(t *testing.T) {
	h := sample()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, h); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != len(h) {
		t.Fatalf("%d lines for %d ops", n, len(h))
	}
	if !strings.Contains(buf.String(), `{"f":"send","key":0,"value":17,"offset":4}`) ||
		!strings.Contains(buf.String(), `"polls":{"0":[[3,12],[4,17]],"1":[]}`) ||
		!strings.Contains(buf.String(), `{"f":"send","key":1,"value":5}`) {
		t.Fatalf("unexpected encoding:\n%s", buf.String())
	}
	got, err := ReadJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, h)
	}
}

func TestValidate(t *testing.T) {
	if err := sample().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(h History){
		"index":          func(h History) { h[1].Index = 7 },
		"type":           func(h History) { h[1].Type = "invoke" },
		"kind":           func(h History) { h[1].F = "read" },
		"time":           func(h History) { h[1].Complete = 2 },
		"send in poll":   func(h History) { h[1].F = Poll },
		"poll in send":   func(h History) { h[1].F = Send },
		"offset":         func(h History) { h[1].Mops[0].Offset = -2 },
		"poll offset":    func(h History) { h[1].Mops[1].Polls[0][0].Offset = -1 },
		"mops on assign": func(h History) { h[0].Mops = []Mop{SendMop(0, 1)} },
		"overlap":        func(h History) { h[1].Invoke = 1 },
	} {
		h := sample()
		mutate(h)
		if err := h.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", name, err)
		}
	}
}

func TestRecorderIndexesInCompletionOrder(t *testing.T) {
	r := NewRecorder()
	a := r.Now()
	if i := r.Add(Op{Process: 1, Type: OK, F: Poll, Invoke: a, Complete: r.Now()}); i != 0 {
		t.Fatalf("first index %d", i)
	}
	if i := r.Add(Op{Process: 2, Type: OK, F: Poll, Invoke: a, Complete: r.Now()}); i != 1 {
		t.Fatalf("second index %d", i)
	}
	h := r.History()
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
}
