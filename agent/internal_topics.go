package agent

// Kafka's internal topics.
//
// floe keeps committed offsets and transaction state in the metadata store,
// not in topics, but clients expect __consumer_offsets to exist and to be
// flagged internal: regex consumers skip internal topics by that flag
// (franz-go, librdkafka), and admin tools list it. So every agent makes sure
// a real, empty, read-only __consumer_offsets topic exists. Internal-ness is
// decided by name, as Kafka's Topic.isInternal does, so __transaction_state
// is internal too if a client ever auto-creates it.

import (
	"context"
	"errors"
	"fmt"

	"floe/metadata"
)

// offsetsTopic is Kafka's committed-offsets topic.
const offsetsTopic = "__consumer_offsets"

// offsetsTopicPartitions is its partition count. Kafka defaults to 50
// (offsets.topic.num.partitions) because it spreads coordinators over them;
// here nothing is ever written to it, so one partition keeps metadata small.
const offsetsTopicPartitions = 1

// isInternalTopic reports whether name is one of Kafka's internal topics.
func isInternalTopic(name string) bool { return metadata.IsInternalTopic(name) }

// ensureInternalTopics creates __consumer_offsets if no agent has yet.
func (a *Agent) ensureInternalTopics(ctx context.Context) error {
	_, err := a.store.CreateTopic(ctx, offsetsTopic, offsetsTopicPartitions, map[string]string{"cleanup.policy": "compact"})
	if err != nil && !errors.Is(err, metadata.ErrTopicExists) {
		return fmt.Errorf("create %s: %w", offsetsTopic, err)
	}
	return nil
}
