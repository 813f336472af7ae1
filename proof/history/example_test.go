package history_test

import (
	"os"

	"floe/proof/history"
)

// A client records each op with the recorder's clock around its call; the
// recorder numbers ops in completion order.
func ExampleRecorder() {
	rec := history.NewRecorder()

	inv := rec.Now()
	// … produce value 17 to the partition of key 3; the broker says offset 4 …
	rec.Add(history.Op{Process: 0, Type: history.OK, F: history.Send, Invoke: inv, Complete: inv + 1,
		Mops: []history.Mop{history.SendAt(3, 4, 17)}})

	inv = rec.Now()
	// … poll; it returns offsets 3 and 4 of key 3 …
	rec.Add(history.Op{Process: 1, Type: history.OK, F: history.Poll, Invoke: inv, Complete: inv + 1,
		Mops: []history.Mop{history.PollMop(map[history.Key][]history.Pair{3: {{Offset: 3, Value: 12}, {Offset: 4, Value: 17}}})}})

	h := rec.History()
	for i := range h { // fixed times, for the example's output
		h[i].Invoke, h[i].Complete = int64(10*i), int64(10*i+5)
	}
	_ = history.WriteJSON(os.Stdout, h)
	// Output:
	// {"index":0,"process":0,"type":"ok","f":"send","invoke":0,"complete":5,"mops":[{"f":"send","key":3,"value":17,"offset":4}]}
	// {"index":1,"process":1,"type":"ok","f":"poll","invoke":10,"complete":15,"mops":[{"f":"poll","polls":{"3":[[3,12],[4,17]]}}]}
}
