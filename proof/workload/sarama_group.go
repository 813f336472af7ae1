package workload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"floe/proof/history"
)

// saramaGroup is a sarama subscribe worker's consumer group. sarama drives a
// group through callbacks in goroutines of its own (a session per
// generation, a ConsumeClaim per partition), so the group's claims hand
// their messages over an unbuffered channel to the worker's polls, which
// take what is ready and commit it, as a franz-go subscribe worker's poll
// does.
//
// A new session after the first means the group rebalanced under the
// worker: its claims restart from the committed offsets, which need not be
// where its polls left off, so the worker's next poll fails with an unknown
// outcome and the worker crashes to a new process rather than record a
// position it did not keep. (The checker forgives a rebalance inside an op,
// not across a process's ops.)
type saramaGroup struct {
	w      *worker
	id     string
	topics []string

	cg   sarama.ConsumerGroup
	msgs chan *sarama.ConsumerMessage
	stop context.CancelFunc
	done chan struct{}

	// mu guards the session and the counts below, which sarama's
	// goroutines set.
	mu       sync.Mutex
	sess     sarama.ConsumerGroupSession
	sessions int
	failed   error // the last error Consume returned
}

var _ sarama.ConsumerGroupHandler = (*saramaGroup)(nil)

// start joins the group through cl and consumes in the background until
// close.
func (g *saramaGroup) start(cl sarama.Client) error {
	cg, err := sarama.NewConsumerGroupFromClient(g.id, cl)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cg, g.msgs, g.stop, g.done = cg, make(chan *sarama.ConsumerMessage), cancel, make(chan struct{})
	go func() {
		defer close(g.done)
		for ctx.Err() == nil {
			err := cg.Consume(ctx, g.topics, g)
			if errors.Is(err, sarama.ErrClosedConsumerGroup) {
				return
			}
			if err != nil {
				g.mu.Lock()
				g.failed = err
				g.mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	return nil
}

func (g *saramaGroup) close() {
	g.stop()
	_ = g.cg.Close()
	<-g.done
}

// Setup and Cleanup mark the session's partitions rebalanced, as the
// franz-go workers' OnPartitionsAssigned and OnPartitionsRevoked do.
func (g *saramaGroup) Setup(s sarama.ConsumerGroupSession) error {
	g.w.onRebalance(context.Background(), nil, s.Claims())
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sess = s
	g.sessions++
	return nil
}

func (g *saramaGroup) Cleanup(s sarama.ConsumerGroupSession) error {
	g.w.onRebalance(context.Background(), nil, s.Claims())
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sess = nil
	return nil
}

// ConsumeClaim hands the claim's messages, in order, to the worker's polls
// until the session ends.
func (g *saramaGroup) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			select {
			case g.msgs <- msg:
			case <-s.Context().Done():
				return nil
			}
		case <-s.Context().Done():
			return nil
		}
	}
}

// state returns the current session, how many began, and an error of the
// group not yet reported (taken).
func (g *saramaGroup) state() (sarama.ConsumerGroupSession, int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	err := g.failed
	g.failed = nil
	if err == nil {
		select {
		case err = <-g.cg.Errors():
		default:
		}
	}
	return g.sess, g.sessions, err
}

// maxGroupPoll bounds the messages of one poll: the claims keep fetching
// ahead while a poll takes what is ready.
const maxGroupPoll = 1000

// saramaGroupPoll polls the group's claims: at most PollWait for a first
// message, then what the claims hold ready, then marks and commits them in
// the session.
func (w *worker) saramaGroupPoll(ctx context.Context) (map[history.Key][]history.Pair, error) {
	r := w.run
	m := map[history.Key][]history.Pair{}
	if err := w.sc.connect(); err != nil {
		return m, err
	}
	g := w.sc.group
	if _, n, err := g.state(); err != nil || n > 1 {
		if err == nil {
			err = errors.New("group session restarted")
		}
		return m, fmt.Errorf("group %s: %w", g.id, err)
	}
	pctx, cancel := context.WithTimeout(ctx, r.cfg.PollWait)
	defer cancel()
	var msgs []*sarama.ConsumerMessage
	select {
	case msg := <-g.msgs:
		msgs = append(msgs, msg)
	case <-pctx.Done():
		return m, ctx.Err() // nothing in PollWait is not an error
	}
more:
	for len(msgs) < maxGroupPoll {
		select {
		case msg := <-g.msgs:
			msgs = append(msgs, msg)
		default:
			break more
		}
	}
	for _, msg := range msgs {
		if k, p, ok := r.readRecord(msg.Topic, msg.Partition, msg.Offset, msg.Value); ok {
			m[k] = append(m[k], p)
		}
	}
	sess, n, err := g.state()
	switch {
	case err != nil:
	case n > 1:
		err = errors.New("group session restarted")
	case sess == nil:
		err = errors.New("no group session to commit in")
	default:
		for _, msg := range msgs {
			sess.MarkMessage(msg, "")
		}
		// Commit reports its errors through the group's error channel.
		sess.Commit()
		_, _, err = g.state()
	}
	if err != nil {
		return m, fmt.Errorf("group %s: %w", g.id, err)
	}
	return m, ctx.Err()
}
