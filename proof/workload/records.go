package workload

import (
	"strconv"

	"floe/proof/history"
)

// The helpers every client library's worker shares, so that a franz-go and
// a sarama worker pick keys and values and read records back alike.

// nextSend picks a random key and the run's next unique value for a send,
// with the key's topic and partition.
func (w *worker) nextSend() (k history.Key, topic string, partition int32, v int64) {
	r := w.run
	k = history.Key(w.rng.IntN(r.keys.Count()))
	topic, partition = r.keys.Partition(k)
	return k, topic, partition, r.value.Add(1)
}

// encodeValue is a value as the workload writes it in a record.
func encodeValue(v int64) []byte { return strconv.AppendInt(nil, v, 10) }

// readRecord returns the key and (offset, value) of a record read, false if
// it is not one of the run's (another topic, a value the workload did not
// write).
func (r *run) readRecord(topic string, partition int32, offset int64, value []byte) (history.Key, history.Pair, bool) {
	k, ok := r.keys.Key(topic, partition)
	if !ok {
		return 0, history.Pair{}, false
	}
	v, err := strconv.ParseInt(string(value), 10, 64)
	if err != nil {
		return 0, history.Pair{}, false
	}
	return k, history.Pair{Offset: offset, Value: v}, true
}

// All lists every key, increasing.
func (m Keys) All() []history.Key {
	ks := make([]history.Key, m.Count())
	for i := range ks {
		ks[i] = history.Key(i)
	}
	return ks
}
