package agent

// Produce (key 0), versions 0–11 advertised, 3–11 served.
//
// Produce v0–2 (message format v0/v1) are advertised only because librdkafka
// stops compressing when Produce v0 is missing; such requests are answered
// with UNSUPPORTED_VERSION per partition, as Kafka 4 does. v12 (KIP-890
// implicit transactions) and v13 (topic ids) are not served.
//
// Each partition's batches are validated as a Kafka broker validates them
// (kafkaproto.ValidateProduced for the batch, the topic's max.message.bytes,
// then kafkaproto.ValidateRecords for every record, decompressing as it
// goes, with keys required on compacted topics), then join the agent's
// pending object. A partition that fails gets the Kafka error code, with
// the reason in its error message and, from v8, the records at fault; the
// rest of the request is unaffected. Topics that ask for schema validation
// have each record checked against the schema registry as ValidateRecords
// walks it (validation.Batch, answered by schemaVerdict).
// acks outside -1, 0 and 1 is INVALID_REQUIRED_ACKS for every partition
// that passed authorization. acks=1 and acks=-1 both wait until the object is
// in the bucket and committed; acks=0 gets no answer, and a failure closes
// the connection as Kafka does.
//
// Transactional batches are accepted in partitions added to their
// producer's ongoing transaction (AddPartitionsToTxn); the commit
// transaction checks it, as it checks sequences.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
	"floe/schemaregistry/validation"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.Produce), AdvertisedMin: 0, HandledMin: 0, Max: 11})
}

func (a *Agent) handleProduce(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	start := time.Now()

	// waiters of the accepted partitions, in response order.
	var waiters []*produceWaiter
	failed := false

	// A transactional producer needs WRITE on its transactional id (else
	// every partition fails, as in Kafka), every producer WRITE on each
	// topic (checked before the topic's existence is disclosed).
	txnDenied := a.authzEnabled() && req.TransactionID != nil && !a.authorize(r, opWrite, resTxnID, *req.TransactionID)

	// Enqueue in this connection's request order.
	<-r.prev
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		writeOK := a.authorize(r, opWrite, resTopic, rt.Topic)
		topic, ok, err := a.topics.get(ctx, rt.Topic)
		if err != nil {
			a.log.Warn("produce: topic lookup failed", "topic", rt.Topic, "err", err)
		}
		rules := validation.RulesOf(topic.Configs)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			sp.LogAppendTime = -1
			sp.LogStartOffset = -1
			code := func() *kerr.Error {
				switch {
				case req.Version < 3:
					return kerr.UnsupportedVersion
				case txnDenied:
					return kerr.TransactionalIDAuthorizationFailed
				case !writeOK:
					return kerr.TopicAuthorizationFailed
				case err != nil:
					return kerr.KafkaStorageError
				case !ok || rp.Partition < 0 || rp.Partition >= topic.Partitions:
					return kerr.UnknownTopicOrPartition
				case isInternalTopic(rt.Topic):
					return kerr.InvalidTopicException // as Kafka: "cannot append to internal topic"
				case req.Acks != -1 && req.Acks != 0 && req.Acks != 1:
					return kerr.InvalidRequiredAcks // as Kafka's ReplicaManager, after authorization
				}
				recRules := a.recordRules(topic)
				var schemas *validation.Batch
				if rules.On() && a.cfg.SchemaRegistry != nil {
					schemas = validation.NewBatch(ctx, a.cfg.SchemaRegistry, rt.Topic, rules)
					recRules.Visit = schemas.Visit // one walk checks the batch and its schemas
				}
				b, verr := validateProduceRecords(req.Version, rp.Records, a.maxMessageBytes(topic), recRules)
				if verr != nil {
					return produceError(&sp, verr)
				}
				if rules.On() {
					if code := a.schemaVerdict(&sp, rt.Topic, schemas); code != nil {
						return code
					}
				}
				if b.transactional && req.TransactionID == nil && a.authzEnabled() {
					return kerr.TransactionalIDAuthorizationFailed // Kafka: transactional records need an authorized id
				}
				r.frame.Ref() // the batch aliases the frame until the batcher copies it
				b.frame = r.frame
				pw, aerr := a.batcher.add(topic.ID, rp.Partition, b)
				if aerr != nil {
					return kerr.NotLeaderForPartition
				}
				waiters = append(waiters, pw)
				a.metrics.producedBytes.Add(float64(len(rp.Records)))
				a.metrics.producedRecords.Add(float64(b.records))
				return nil
			}()
			if code != nil {
				sp.ErrorCode = code.Code
				failed = true
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	close(r.next)

	if req.Acks == 0 {
		if failed {
			return nil, errors.New("acks=0 produce failed validation")
		}
		return nil, nil
	}
	for _, pw := range waiters {
		<-pw.done
	}
	i := 0
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			sp := &resp.Topics[ti].Partitions[pi]
			if sp.ErrorCode != 0 {
				continue
			}
			pw := waiters[i]
			i++
			if pw.err != nil {
				sp.ErrorCode = pw.err.Code
				continue
			}
			sp.BaseOffset = pw.baseOffset
		}
	}
	a.metrics.produceSeconds.Observe(time.Since(start).Seconds())
	return resp, nil
}

// schemaVerdict answers a partition whose batch was walked with its
// schema check (schemas; nil when the agent has no registry): a record
// refused fails the whole partition with INVALID_RECORD, naming every
// refused record and why, as Kafka's RecordValidationException answers
// (v8+ carries the records). The registry's own failure is
// KAFKA_STORAGE_ERROR, retriable.
func (a *Agent) schemaVerdict(sp *kmsg.ProduceResponseTopicPartition, topic string, schemas *validation.Batch) *kerr.Error {
	if schemas == nil {
		msg := errNoRegistry.Error()
		sp.ErrorMessage = &msg
		return kerr.InvalidRecord
	}
	for _, r := range schemas.Refused {
		a.metrics.schemaFailures.WithLabelValues(topic, string(r.Reason)).Inc()
		er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		er.RelativeOffset = r.Record
		er.ErrorMessage = &r.Msg
		sp.ErrorRecords = append(sp.ErrorRecords, er)
	}
	if schemas.Err != nil {
		a.log.Warn("produce: schema registry look-up failed", "topic", topic, "err", schemas.Err)
		return kerr.KafkaStorageError
	}
	if len(schemas.Refused) == 0 {
		return nil
	}
	first := fmt.Sprintf("record %d: %s", schemas.Refused[0].Record, schemas.Refused[0].Msg)
	if n := len(schemas.Refused); n > 1 {
		first += fmt.Sprintf(" (and %d more records refused)", n-1)
	}
	sp.ErrorMessage = &first
	return kerr.InvalidRecord
}

// recordRules are the topic's rules for kafkaproto.ValidateRecords: keys
// are required when its cleanup.policy includes compact, as in Kafka.
func (a *Agent) recordRules(t metadata.Topic) kafkaproto.RecordRules {
	_, compact := a.defaults.Get().Policies(t.Configs)
	return kafkaproto.RecordRules{KeyRequired: compact}
}

// produceError sets a partition's answer to a validation failure and
// returns its code: a *kerr.Error as is, a *kafkaproto.RecordError with its
// message and, when records are named, one record error per record (as
// Kafka's RecordValidationException answers; Produce v8+ carries them).
func produceError(sp *kmsg.ProduceResponseTopicPartition, err error) *kerr.Error {
	var re *kafkaproto.RecordError
	if !errors.As(err, &re) {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return ke
		}
		return kerr.CorruptMessage
	}
	sp.ErrorMessage = &re.Message
	for _, i := range re.Records {
		er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		er.RelativeOffset = i
		sp.ErrorRecords = append(sp.ErrorRecords, er)
	}
	return re.Err
}

// validateProduceRecords checks one partition's records as Kafka's
// ProduceRequest.validateRecords and log validation do: exactly one v2 batch
// (INVALID_RECORD otherwise, magic 0/1 included), zstd only from Produce v7
// (UNSUPPORTED_COMPRESSION_TYPE), then the batch's own checks, the topic's
// max.message.bytes, and every record's (ValidateRecords). The error is a
// *kerr.Error or a *kafkaproto.RecordError.
func validateProduceRecords(version int16, records []byte, maxBytes int64, rules kafkaproto.RecordRules) (produceBatch, error) {
	raw, err := kafkaproto.SplitBatches(records)
	if err != nil {
		// A v0/v1 message set does not split as v2 batches do; Kafka
		// rejects every non-v2 payload with INVALID_RECORD.
		if h, herr := kafkaproto.ParseBatchHeader(records); herr == nil && h.Magic != 2 {
			return produceBatch{}, kerr.InvalidRecord
		}
		return produceBatch{}, kerr.CorruptMessage
	}
	if len(raw) != 1 {
		return produceBatch{}, kerr.InvalidRecord
	}
	b := raw[0]
	h, err := kafkaproto.ValidateProduced(b)
	if err != nil {
		if h.Magic != 2 && h.Length > 0 {
			return produceBatch{}, kerr.InvalidRecord
		}
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return produceBatch{}, ke
		}
		return produceBatch{}, kerr.CorruptMessage
	}
	if h.Codec() == 4 && version < 7 {
		return produceBatch{}, kerr.UnsupportedCompressionType
	}
	if int64(len(b)) > maxBytes {
		return produceBatch{}, kerr.MessageTooLarge
	}
	if h.IsTransactional() && h.ProducerID < 0 {
		return produceBatch{}, kerr.InvalidRecord
	}
	// Last, as in Kafka: the walk costs the most, and decompresses.
	if err := kafkaproto.ValidateRecords(b, rules); err != nil {
		return produceBatch{}, err
	}
	pb := produceBatch{data: b, crc: kafkaproto.BatchChecksum(b), records: int64(h.NumRecords), minTS: h.FirstTimestamp, maxTS: h.MaxTimestamp, pid: -1}
	if h.ProducerID >= 0 {
		pb.pid, pb.epoch, pb.sequence = h.ProducerID, h.ProducerEpoch, h.BaseSequence
		// Whether the partition is in the producer's ongoing transaction
		// is decided in the commit transaction (INVALID_TXN_STATE if not),
		// where a marker committed meanwhile is seen.
		pb.transactional = h.IsTransactional()
	}
	return pb, nil
}
