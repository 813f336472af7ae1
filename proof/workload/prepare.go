package workload

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrNotFresh: a topic of the run already holds records. Values are unique
// only within a run, so an old record would read as a value no one sent or a
// duplicate.
var ErrNotFresh = errors.New("workload: topics must be empty")

// prepare creates the run's topics when missing and checks that every
// partition exists and is empty.
func (r *run) prepare(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.cfg.Brokers...))
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics := r.keys.TopicNames()
	created, err := adm.CreateTopics(ctx, int32(r.keys.Partitions), -1, nil, topics...)
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	for _, c := range created {
		if c.Err != nil && !errors.Is(c.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", c.Topic, c.Err)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	seen := 0
	var bad error
	ends.Each(func(o kadm.ListedOffset) {
		if _, ours := r.keys.Key(o.Topic, o.Partition); !ours {
			return
		}
		seen++
		switch {
		case bad != nil:
		case o.Err != nil:
			bad = fmt.Errorf("end offset of %s/%d: %w", o.Topic, o.Partition, o.Err)
		case o.Offset != 0:
			bad = fmt.Errorf("%w: %s/%d ends at %d", ErrNotFresh, o.Topic, o.Partition, o.Offset)
		}
	})
	if bad != nil {
		return bad
	}
	if seen != r.keys.Count() {
		return fmt.Errorf("workload: found %d of the %d partitions of %v", seen, r.keys.Count(), topics)
	}
	return nil
}
