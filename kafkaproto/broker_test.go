package kafkaproto

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testBroker is a minimal in-process Kafka broker built on this package:
// enough of ApiVersions, Metadata, InitProducerId and Produce for a real
// franz-go client to produce to partition 0 of any topic. It records the raw
// records field of every produced partition, which gives the tests genuine
// client batches for every codec, and it exercises framing, headers, decoding
// and responses against a real client.
//
// produced and headers are guarded by mu; everything else is set before the
// accept loop starts.
type testBroker struct {
	t     testing.TB
	ln    net.Listener
	table Table
	wg    sync.WaitGroup

	mu       sync.Mutex
	produced [][]byte
	headers  []RequestHeader
	conns    []net.Conn
}

// producerID is what the test broker's InitProducerId hands out.
const producerID = 7

func newTestBroker(t testing.TB) *testBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &testBroker{t: t, ln: ln}
	b.table.Register(Versions{Key: 18, AdvertisedMin: 0, HandledMin: 0, Max: 4})
	b.table.Register(Versions{Key: 3, AdvertisedMin: 0, HandledMin: 0, Max: 12})
	// Advertised from 0 like a real floe agent; v12+ needs KIP-890.
	b.table.Register(Versions{Key: 0, AdvertisedMin: 0, HandledMin: 3, Max: 11})
	b.table.Register(Versions{Key: 22, AdvertisedMin: 0, HandledMin: 0, Max: 5})
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(b.close)
	return b
}

func (b *testBroker) addr() string { return b.ln.Addr().String() }

func (b *testBroker) close() {
	b.ln.Close()
	b.mu.Lock()
	for _, c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

func (b *testBroker) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns = append(b.conns, c)
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			defer c.Close()
			if err := b.serve(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				b.t.Errorf("test broker: %v", err)
			}
		}()
	}
}

func (b *testBroker) serve(c net.Conn) error {
	for {
		frame, err := ReadFrame(c, DefaultMaxRequestSize)
		if err != nil {
			return err
		}
		hdr, body, err := ParseRequestHeader(frame)
		if err != nil {
			return err
		}
		b.mu.Lock()
		b.headers = append(b.headers, hdr)
		b.mu.Unlock()
		resp, err := b.handle(hdr, body)
		if err != nil {
			return err
		}
		if _, err := c.Write(AppendResponse(nil, hdr, resp)); err != nil {
			return err
		}
	}
}

func (b *testBroker) handle(hdr RequestHeader, body []byte) (kmsg.Response, error) {
	if !b.table.Supported(hdr.APIKey, hdr.APIVersion) {
		if hdr.APIKey == 18 {
			// KIP-511: answer an unknown ApiVersions version with a v0
			// body so the client can retry at a version we know.
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			resp.ApiKeys = b.table.ApiVersionsKeys()
			return resp, nil
		}
		return nil, errors.New("unsupported request " + strconv.Itoa(int(hdr.APIKey)))
	}
	req, err := DecodeRequest(hdr, body)
	if err != nil {
		return nil, err
	}
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ApiKeys = b.table.ApiVersionsKeys()
		return resp, nil
	case *kmsg.MetadataRequest:
		return b.metadata(req), nil
	case *kmsg.InitProducerIDRequest:
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = producerID, 0
		return resp, nil
	case *kmsg.ProduceRequest:
		return b.produce(req), nil
	}
	return nil, errors.New("unhandled request " + strconv.Itoa(int(hdr.APIKey)))
}

func (b *testBroker) metadata(req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	host, portStr, _ := net.SplitHostPort(b.addr())
	port, _ := strconv.Atoi(portStr)
	br := kmsg.NewMetadataResponseBroker()
	br.NodeID, br.Host, br.Port = 0, host, int32(port)
	resp.Brokers = append(resp.Brokers, br)
	resp.ControllerID = 0
	for i, rt := range req.Topics {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = rt.Topic
		t.TopicID = [16]byte{1, byte(i + 1)}
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition, p.Leader, p.Replicas, p.ISR = 0, 0, []int32{0}, []int32{0}
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func (b *testBroker) produce(req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, rt := range req.Topics {
		t := kmsg.NewProduceResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewProduceResponseTopicPartition()
			p.Partition = rp.Partition
			b.produced = append(b.produced, slices.Clone(rp.Records))
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// producedRecords returns every records field produced so far.
func (b *testBroker) producedRecords() [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.produced)
}

// produceWithKgo produces recs to partition 0 of "t" through a real franz-go
// client with the given codec and returns the records fields the broker got.
func produceWithKgo(t testing.TB, codec kgo.CompressionCodec, recs []*kgo.Record) [][]byte {
	t.Helper()
	b := newTestBroker(t)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.addr()),
		kgo.DefaultProduceTopic("t"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(50*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, r := range recs {
		wg.Add(1)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	wg.Wait()
	return b.producedRecords()
}
