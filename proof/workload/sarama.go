package workload

// sarama workers: issue 30 asks for more than one client library on the
// non-transactional part of the workload, so that an answer franz-go happens
// to tolerate (or a request only sarama makes) is exercised too. A sarama
// worker is a worker whose client is a saramaClient instead of a kgo.Client;
// the loop, the process ids, crashes, reassigns and the ops it records are
// the franz-go worker's.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"floe/proof/history"
)

// saramaVersion is the Kafka version sarama speaks, from which it picks its
// request versions: idempotence needs 0.11 or later; kfake serves 3.6's, and
// floe's own sarama tests run 2.8's and 4.0's on either side of it.
var saramaVersion = sarama.V3_6_0_0

// saramaClient is a sarama worker's client: an idempotent sync producer and a
// consumer over one sarama.Client, connected at the first op that needs them
// (sarama dials when it is built, and an unreachable cluster is an op's
// unknown outcome, not a worker that cannot start). Only the worker's
// goroutine touches it, except the sends it gave up on, which close waits for.
type saramaClient struct {
	brokers []string
	cfg     *sarama.Config

	client   sarama.Client
	producer sarama.SyncProducer
	consumer sarama.Consumer // assign only
	group    *saramaGroup    // subscribe only
	// parts are the partition consumers of an assign worker, opened at the
	// first poll of a key from the key's start and closed when the key is
	// dropped, so that a key assigned again starts over.
	parts map[history.Key]sarama.PartitionConsumer
	// inflight counts the sends in flight, among them those whose op gave
	// up at its timeout; close waits for them after closing the producer.
	inflight sync.WaitGroup
}

// saramaConfig is a sarama worker's configuration: acks=all, idempotence
// (which needs one request in flight), the manual partitioner so that a
// message goes to its key's partition, read_committed, and network timeouts
// within OpTimeout.
func (r *run) saramaConfig(clientID string) (*sarama.Config, error) {
	c := sarama.NewConfig()
	c.ClientID = clientID
	c.Version = saramaVersion
	c.Net.MaxOpenRequests = 1
	c.Net.DialTimeout = r.cfg.OpTimeout
	c.Net.ReadTimeout = r.cfg.OpTimeout
	c.Net.WriteTimeout = r.cfg.OpTimeout
	c.Metadata.Retry.Max = 1
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Metadata.AllowAutoTopicCreation = false
	c.Producer.Idempotent = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	c.Producer.Retry.Max = 3
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	c.Producer.Timeout = r.cfg.OpTimeout
	c.Consumer.IsolationLevel = sarama.ReadCommitted
	c.Consumer.MaxWaitTime = r.cfg.PollWait
	c.Consumer.Return.Errors = true
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Enable = false // polls commit
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("sarama config: %w", err)
	}
	return c, nil
}

// openSarama is open for a sarama worker: a fresh process, a fresh
// (unconnected) client, and the assign it starts with.
func (w *worker) openSarama() error {
	r := w.run
	if !slices.Contains(SaramaKinds, w.kind) {
		return fmt.Errorf("no sarama worker of kind %s", w.kind)
	}
	w.pid = r.nextProcess()
	o := history.Op{Process: w.pid, Type: history.OK, Invoke: r.rec.Now()}
	cfg, err := r.saramaConfig(fmt.Sprintf("%s-sarama-%d", r.cfg.Group, w.id))
	if err != nil {
		return err
	}
	w.sc = &saramaClient{brokers: r.cfg.Brokers, cfg: cfg}
	switch w.kind {
	case KindAssign:
		w.sc.parts = map[history.Key]sarama.PartitionConsumer{}
		w.keys = w.randomKeys()
		o.F, o.Keys, o.SeekToBeginning = history.Assign, slices.Clone(w.keys), true
	case KindSubscribe:
		// Its own group: sarama's default protocol (range) and franz-go's
		// (cooperative-sticky) have none in common.
		w.sc.group = &saramaGroup{w: w, id: r.cfg.Group + "-sarama-" + string(w.kind), topics: r.keys.TopicNames()}
		o.F, o.Keys = history.Subscribe, r.keys.All()
	}
	o.Complete = r.rec.Now()
	r.rec.Add(o)
	return nil
}

// connect builds the client, producer and consumer if they are not built.
func (c *saramaClient) connect() error {
	if c.client != nil {
		return nil
	}
	cl, err := sarama.NewClient(c.brokers, c.cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	p, err := sarama.NewSyncProducerFromClient(cl)
	if err != nil {
		_ = cl.Close()
		return fmt.Errorf("producer: %w", err)
	}
	if c.group != nil {
		err = c.group.start(cl)
	} else {
		c.consumer, err = sarama.NewConsumerFromClient(cl)
	}
	if err != nil {
		_ = p.Close()
		_ = cl.Close()
		return fmt.Errorf("consumer: %w", err)
	}
	c.client, c.producer = cl, p
	return nil
}

// close closes what connect built; the sends given up on return once the
// producer is closed.
func (c *saramaClient) close() {
	if c.client == nil {
		return
	}
	for k, pc := range c.parts {
		pc.AsyncClose()
		delete(c.parts, k)
	}
	if c.group != nil {
		c.group.close()
	}
	_ = c.producer.Close()
	c.inflight.Wait()
	if c.consumer != nil {
		_ = c.consumer.Close()
	}
	_ = c.client.Close()
	c.client, c.producer, c.consumer = nil, nil, nil
}

// drop closes the partition consumers of keys no longer assigned.
func (c *saramaClient) drop(keys []history.Key) {
	for _, k := range keys {
		if pc, ok := c.parts[k]; ok {
			pc.AsyncClose()
			delete(c.parts, k)
		}
	}
}

// saramaSend: one record outside any transaction, through the idempotent
// sync producer. SendMessage takes no context, so it runs aside and the op
// gives up at ctx's end with an unknown outcome; the worker then crashes
// its client, whose close waits for the send.
func (w *worker) saramaSend(ctx context.Context, o *history.Op) {
	o.F = history.Send
	k, t, p, v := w.nextSend()
	o.Mops = []history.Mop{history.SendMop(k, v)}
	if err := w.sc.connect(); err != nil {
		o.Type, o.Error = history.Info, err.Error()
		return
	}
	type sent struct {
		offset int64
		err    error
	}
	done := make(chan sent, 1)
	msg := &sarama.ProducerMessage{Topic: t, Partition: p, Value: sarama.ByteEncoder(encodeValue(v))}
	w.sc.inflight.Add(1)
	go func() {
		defer w.sc.inflight.Done()
		_, off, err := w.sc.producer.SendMessage(msg)
		done <- sent{off, err}
	}()
	select {
	case s := <-done:
		if s.err != nil {
			o.Type, o.Error = history.Info, s.err.Error()
			return
		}
		o.Mops = []history.Mop{history.SendAt(k, s.offset, v)}
	case <-ctx.Done():
		o.Type, o.Error = history.Info, ctx.Err().Error()
	}
}

// saramaPoll: one poll, as pollOnce: at most PollWait for the first
// records, then whatever else is already buffered; a group member then
// commits what it polled.
func (w *worker) saramaPoll(ctx context.Context, o *history.Op) {
	o.F = history.Poll
	poll := w.saramaPollOnce
	if w.kind == KindSubscribe {
		poll = w.saramaGroupPoll
	}
	m, err := poll(ctx)
	o.Mops = []history.Mop{history.PollMop(m)}
	if err != nil {
		o.Type, o.Error = history.Info, err.Error()
	}
}

func (w *worker) saramaPollOnce(ctx context.Context) (map[history.Key][]history.Pair, error) {
	r, c := w.run, w.sc
	m := map[history.Key][]history.Pair{}
	if err := c.connect(); err != nil {
		return m, err
	}
	for _, k := range w.keys {
		if _, ok := c.parts[k]; ok {
			continue
		}
		t, p := r.keys.Partition(k)
		pc, err := c.consumer.ConsumePartition(t, p, sarama.OffsetOldest)
		if err != nil {
			return m, fmt.Errorf("consume %s/%d: %w", t, p, err)
		}
		c.parts[k] = pc
	}
	pctx, cancel := context.WithTimeout(ctx, r.cfg.PollWait)
	defer cancel()
	// Wait for the first message or error of any key, or the end of the
	// poll; the cases are ctx's end, then each key's messages and errors.
	keys := history.SortedKeys(c.parts)
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(pctx.Done())}}
	for _, k := range keys {
		cases = append(cases,
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c.parts[k].Messages())},
			reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c.parts[k].Errors())})
	}
	add := func(msg *sarama.ConsumerMessage) {
		if k, p, ok := r.readRecord(msg.Topic, msg.Partition, msg.Offset, msg.Value); ok {
			m[k] = append(m[k], p)
		}
	}
	chosen, v, ok := reflect.Select(cases)
	switch {
	case chosen == 0:
		return m, ctx.Err() // nothing in PollWait is not an error
	case !ok:
		return m, errors.New("partition consumer closed")
	case chosen%2 == 0:
		err := v.Interface().(*sarama.ConsumerError)
		return m, fmt.Errorf("fetch %s/%d: %w", err.Topic, err.Partition, err.Err)
	}
	add(v.Interface().(*sarama.ConsumerMessage))
	// Then what the other keys (and this one) already hold, no more: a
	// partition consumer keeps fetching ahead.
	for _, k := range keys {
		pc := c.parts[k]
		for n := len(pc.Messages()); n > 0; n-- {
			add(<-pc.Messages())
		}
		select {
		case err := <-pc.Errors():
			return m, fmt.Errorf("fetch %s/%d: %w", err.Topic, err.Partition, err.Err)
		default:
		}
	}
	return m, ctx.Err()
}

// SaramaKinds are the kinds of worker a sarama client serves
// (Config.SaramaWorkers): the non-transactional ones.
var SaramaKinds = []Kind{KindAssign, KindSubscribe}
