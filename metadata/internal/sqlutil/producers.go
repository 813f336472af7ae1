package sqlutil

import (
	"encoding/json"
	"fmt"

	"floe/metadata"
)

// EncodeProducerState stores a producer's last batches as a JSON array of
// [first_seq, last_seq, base_offset], oldest first.
func EncodeProducerState(st *metadata.ProducerState) (string, error) {
	rows := make([][3]int64, len(st.Batches))
	for i, e := range st.Batches {
		rows[i] = [3]int64{int64(e.FirstSeq), int64(e.LastSeq), e.BaseOffset}
	}
	b, err := json.Marshal(rows)
	return string(b), err
}

// DecodeProducerState reverses EncodeProducerState.
func DecodeProducerState(epoch int16, raw string) (*metadata.ProducerState, error) {
	var rows [][3]int64
	if err := json.Unmarshal([]byte(raw), &rows); err != nil {
		return nil, fmt.Errorf("producer state: %w", err)
	}
	st := &metadata.ProducerState{Epoch: epoch}
	for _, r := range rows {
		st.Batches = append(st.Batches, metadata.SeqEntry{FirstSeq: int32(r[0]), LastSeq: int32(r[1]), BaseOffset: r[2]})
	}
	return st, nil
}
