package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// The JSON form of a history is one op per line (JSON Lines):
//
//	{"index":0,"process":1,"type":"ok","f":"txn","invoke":10,"complete":25,
//	 "mops":[{"f":"send","key":3,"value":17,"offset":4},
//	         {"f":"poll","polls":{"3":[[3,12],[4,17]]}}]}
//
// A send's offset is absent when unknown; a poll's pairs are [offset, value].

type mopJSON struct {
	F      MopF              `json:"f"`
	Key    *Key              `json:"key,omitempty"`
	Value  *int64            `json:"value,omitempty"`
	Offset *int64            `json:"offset,omitempty"`
	Polls  map[string][]Pair `json:"polls,omitempty"`
}

// MarshalJSON writes a send as {f, key, value, offset?} and a poll as
// {f, polls}.
func (m Mop) MarshalJSON() ([]byte, error) {
	j := mopJSON{F: m.F}
	switch m.F {
	case MopSend:
		k, v := m.Key, m.Value
		j.Key, j.Value = &k, &v
		if m.Offset != UnknownOffset {
			off := m.Offset
			j.Offset = &off
		}
	case MopPoll:
		if m.Polls != nil {
			j.Polls = make(map[string][]Pair, len(m.Polls))
			for k, ps := range m.Polls {
				j.Polls[strconv.Itoa(int(k))] = ps
			}
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (m *Mop) UnmarshalJSON(b []byte) error {
	var j mopJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Mop{F: j.F}
	switch j.F {
	case MopSend:
		if j.Key == nil || j.Value == nil {
			return fmt.Errorf("send without key or value")
		}
		m.Key, m.Value, m.Offset = *j.Key, *j.Value, UnknownOffset
		if j.Offset != nil {
			m.Offset = *j.Offset
		}
	case MopPoll:
		if j.Polls != nil {
			m.Polls = make(map[Key][]Pair, len(j.Polls))
			for ks, ps := range j.Polls {
				k, err := strconv.Atoi(ks)
				if err != nil {
					return fmt.Errorf("poll key %q: %w", ks, err)
				}
				m.Polls[Key(k)] = ps
			}
		}
	default:
		return fmt.Errorf("micro-op kind %q", j.F)
	}
	return nil
}

// MarshalJSON writes a pair as [offset, value].
func (p Pair) MarshalJSON() ([]byte, error) {
	return json.Marshal([2]int64{p.Offset, p.Value})
}

// UnmarshalJSON reads [offset, value].
func (p *Pair) UnmarshalJSON(b []byte) error {
	var a [2]int64
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	p.Offset, p.Value = a[0], a[1]
	return nil
}

type opJSON struct {
	Index           int    `json:"index"`
	Process         int    `json:"process"`
	Type            Type   `json:"type"`
	F               F      `json:"f"`
	Invoke          int64  `json:"invoke"`
	Complete        int64  `json:"complete"`
	Mops            []Mop  `json:"mops,omitempty"`
	Keys            []Key  `json:"keys,omitempty"`
	SeekToBeginning bool   `json:"seek_to_beginning,omitempty"`
	Rebalanced      []Key  `json:"rebalanced,omitempty"`
	Error           string `json:"error,omitempty"`
}

// MarshalJSON writes the op with lower-case names and empty fields left out.
func (o Op) MarshalJSON() ([]byte, error) {
	return json.Marshal(opJSON(o))
}

// UnmarshalJSON reads what MarshalJSON writes.
func (o *Op) UnmarshalJSON(b []byte) error {
	var j opJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*o = Op(j)
	return nil
}

// WriteJSON writes h to w, one op per line.
func WriteJSON(w io.Writer, h History) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range h {
		if err := enc.Encode(h[i]); err != nil {
			return fmt.Errorf("encode op %d: %w", i, err)
		}
	}
	return bw.Flush()
}

// ReadJSON reads a history written by WriteJSON and validates it.
func ReadJSON(r io.Reader) (History, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	var h History
	for {
		var o Op
		err := dec.Decode(&o)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("decode op %d: %w", len(h), err)
		}
		h = append(h, o)
	}
	if err := h.Validate(); err != nil {
		return nil, err
	}
	return h, nil
}
