package sqlutil

import (
	"encoding/json"
	"fmt"
	"time"

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

// ProducerInfo builds what DescribeProducers reports of one producer_state
// row: its id, epoch, remembered batches (raw), commit time in unix ms and
// open transaction's first offset (-1 without one).
func ProducerInfo(id int64, epoch int16, raw string, updatedMs, txnStart int64) (metadata.ProducerInfo, error) {
	st, err := DecodeProducerState(epoch, raw)
	if err != nil {
		return metadata.ProducerInfo{}, err
	}
	p := metadata.ProducerInfo{ProducerID: id, Epoch: epoch, LastSequence: -1,
		LastCommit: time.UnixMilli(updatedMs), TxnStartOffset: txnStart}
	if n := len(st.Batches); n > 0 {
		p.LastSequence = st.Batches[n-1].LastSeq
	}
	return p, nil
}
