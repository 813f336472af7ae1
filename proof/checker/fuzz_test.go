package checker

import (
	"bytes"
	"testing"

	"floe/proof/history"
)

// fuzzHistory decodes bytes into a small history that Validate accepts:
// each op takes a few bytes for its process, outcome, kind and micro-ops,
// over 3 keys, 8 values and 8 offsets, so that conflicts, duplicates, skips
// and cycles are all likely.
func fuzzHistory(data []byte) history.History {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	var h history.History
	types := []history.Type{history.OK, history.OK, history.Info, history.Fail}
	for len(data) > 0 && len(h) < 40 {
		b := next()
		inv := int64(len(h)) * 10
		o := history.Op{Process: int(b % 5), Type: types[(b>>3)%4], Invoke: inv - int64(next()%25), Complete: inv + 5}
		if o.Invoke < 0 {
			o.Invoke = 0
		}
		switch (b >> 5) % 8 {
		case 0:
			o.F, o.Keys = history.Assign, []history.Key{history.Key(next() % 3)}
			o.SeekToBeginning = next()%2 == 0
		case 1:
			o.F, o.Keys = history.Subscribe, []history.Key{history.Key(next() % 3), history.Key(next() % 3)}
		case 2:
			o.F, o.Type = history.Crash, history.Info
		default:
			o.F = history.Txn
			for n := next() % 4; n > 0; n-- {
				c := next()
				if c%2 == 0 {
					off := int64(c>>4) % 9
					if off == 8 {
						off = history.UnknownOffset
					}
					o.Mops = append(o.Mops, history.SendAt(history.Key((c>>1)%3), off, int64(next()%8)))
				} else {
					m := map[history.Key][]history.Pair{}
					if c&4 != 0 { // a key polled empty
						m[history.Key((c>>3)%3)] = []history.Pair{}
					}
					for r := next() % 4; r > 0; r-- {
						p := next()
						m[history.Key(p%3)] = append(m[history.Key(p%3)], history.Pair{Offset: int64(p>>2) % 8, Value: int64(p>>5) % 8})
					}
					o.Mops = append(o.Mops, history.PollMop(m))
				}
			}
			if next()%3 == 0 {
				o.Rebalanced = []history.Key{history.Key(next() % 3)}
			}
		}
		h = append(h, o)
	}
	// Processes run one op at a time: start each op after its process's
	// previous one completed.
	last := map[int]int64{}
	for i := range h {
		if c, ok := last[h[i].Process]; ok && h[i].Invoke < c {
			h[i].Invoke = c
		}
		last[h[i].Process] = h[i].Complete
	}
	h.Reindex()
	return h
}

// FuzzCheck: the checker never panics, never rejects a valid history, and
// its verdict agrees with its own lists, with and without ww deps.
func FuzzCheck(f *testing.F) {
	f.Add([]byte{0x60, 3, 3, 0x10, 1, 0x12, 2, 1, 3, 0x45, 0x61, 1, 0, 2, 0x87, 0x99})
	f.Add(bytes.Repeat([]byte{0xe3, 0x02, 0x20, 0x07, 0x31, 0x13, 0x05}, 8))
	f.Add([]byte{0xa0, 0, 2, 0x02, 5, 0x41, 2, 0x21, 0x66, 0xc8, 1, 0x11, 3, 0x42})
	f.Fuzz(func(t *testing.T, data []byte) {
		h := fuzzHistory(data)
		for _, opts := range []Options{{}, {WWDeps: true}} {
			res, err := Check(h, opts)
			if err != nil {
				t.Fatalf("valid history rejected: %v", err)
			}
			if res.Valid != (len(res.Bad) == 0) {
				t.Fatalf("valid %v with bad %v", res.Valid, res.Bad)
			}
			for _, c := range res.Found {
				if res.Counts[c] == 0 || len(res.Anomalies[c]) == 0 {
					t.Fatalf("%s found with count %d", c, res.Counts[c])
				}
				for _, an := range res.Anomalies[c] {
					for _, i := range an.Ops {
						if i < 0 || i >= len(h) {
							t.Fatalf("%s names op %d of %d", c, i, len(h))
						}
					}
				}
			}
			if err := WriteMarkdown(&bytes.Buffer{}, res); err != nil {
				t.Fatal(err)
			}
		}
	})
}
