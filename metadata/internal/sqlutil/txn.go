package sqlutil

import (
	"encoding/json"
	"fmt"

	"floe/metadata"
)

// txnMembers is the JSON shape of a transaction's partitions and groups.
type txnMembers struct {
	Partitions [][2]any `json:"partitions"`
	Groups     []string `json:"groups"`
}

// EncodeTxnMembers stores a transaction's partitions and groups as JSON.
func EncodeTxnMembers(t metadata.Transaction) (string, error) {
	m := txnMembers{Partitions: make([][2]any, len(t.Partitions)), Groups: t.Groups}
	for i, p := range t.Partitions {
		m.Partitions[i] = [2]any{p.Topic, p.Partition}
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// DecodeTxnMembers reverses EncodeTxnMembers into t.
func DecodeTxnMembers(raw string, t *metadata.Transaction) error {
	var m struct {
		Partitions [][2]json.RawMessage `json:"partitions"`
		Groups     []string             `json:"groups"`
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return fmt.Errorf("transaction members: %w", err)
	}
	t.Partitions, t.Groups = nil, m.Groups
	for _, p := range m.Partitions {
		var tp metadata.TopicPartition
		if err := json.Unmarshal(p[0], &tp.Topic); err != nil {
			return fmt.Errorf("transaction members: %w", err)
		}
		if err := json.Unmarshal(p[1], &tp.Partition); err != nil {
			return fmt.Errorf("transaction members: %w", err)
		}
		t.Partitions = append(t.Partitions, tp)
	}
	return nil
}
