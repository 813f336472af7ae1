package kafkaproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawHeader builds a request frame (without the size) by hand.
type rawHeader struct {
	key, version int16
	corr         int32
	clientID     int16 // length; -1 for null, -100 to omit (header v0)
	id           string
	tags         []byte // appended verbatim after the client id
}

func (h rawHeader) bytes(body string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(h.key))
	b = binary.BigEndian.AppendUint16(b, uint16(h.version))
	b = binary.BigEndian.AppendUint32(b, uint32(h.corr))
	if h.clientID != -100 {
		b = binary.BigEndian.AppendUint16(b, uint16(h.clientID))
		b = append(b, h.id...)
	}
	b = append(b, h.tags...)
	return append(b, body...)
}

func strPtr(s string) *string { return &s }

func TestParseRequestHeader(t *testing.T) {
	// Two tagged fields: tag 0 with 3 bytes, tag 5 with none.
	twoTags := []byte{2, 0, 3, 'a', 'b', 'c', 5, 0}
	for _, tc := range []struct {
		name string
		in   rawHeader
		want RequestHeader
	}{
		{"v0 controlled shutdown", rawHeader{key: 7, version: 0, corr: 5, clientID: -100},
			RequestHeader{APIKey: 7, APIVersion: 0, CorrelationID: 5}},
		{"v1 controlled shutdown v1", rawHeader{key: 7, version: 1, corr: 5, clientID: 3, id: "abc"},
			RequestHeader{APIKey: 7, APIVersion: 1, CorrelationID: 5, ClientID: strPtr("abc")}},
		{"v1", rawHeader{key: 3, version: 1, corr: 77, clientID: 3, id: "abc"},
			RequestHeader{APIKey: 3, APIVersion: 1, CorrelationID: 77, ClientID: strPtr("abc")}},
		{"v1 null client id", rawHeader{key: 3, version: 8, corr: -1, clientID: -1},
			RequestHeader{APIKey: 3, APIVersion: 8, CorrelationID: -1}},
		{"v1 empty client id", rawHeader{key: 0, version: 7, corr: 1, clientID: 0},
			RequestHeader{APIKey: 0, APIVersion: 7, CorrelationID: 1, ClientID: strPtr("")}},
		{"v1 api versions v2", rawHeader{key: 18, version: 2, corr: 1, clientID: 1, id: "x"},
			RequestHeader{APIKey: 18, APIVersion: 2, CorrelationID: 1, ClientID: strPtr("x")}},
		{"v2", rawHeader{key: 3, version: 9, corr: 2, clientID: 3, id: "abc", tags: []byte{0}},
			RequestHeader{APIKey: 3, APIVersion: 9, CorrelationID: 2, ClientID: strPtr("abc")}},
		{"v2 null client id", rawHeader{key: 3, version: 12, corr: 2, clientID: -1, tags: []byte{0}},
			RequestHeader{APIKey: 3, APIVersion: 12, CorrelationID: 2}},
		{"v2 empty client id with tags", rawHeader{key: 1, version: 12, corr: 3, clientID: 0, tags: twoTags},
			RequestHeader{APIKey: 1, APIVersion: 12, CorrelationID: 3, ClientID: strPtr("")}},
		{"v2 null client id with tags", rawHeader{key: 0, version: 9, corr: 3, clientID: -1, tags: twoTags},
			RequestHeader{APIKey: 0, APIVersion: 9, CorrelationID: 3}},
		{"v2 api versions v3", rawHeader{key: 18, version: 3, corr: 4, clientID: 2, id: "id", tags: []byte{0}},
			RequestHeader{APIKey: 18, APIVersion: 3, CorrelationID: 4, ClientID: strPtr("id")}},
		{"v2 api versions above kmsg", rawHeader{key: 18, version: 99, corr: 4, clientID: 2, id: "id", tags: []byte{0}},
			RequestHeader{APIKey: 18, APIVersion: 99, CorrelationID: 4, ClientID: strPtr("id")}},
		{"unknown key is v1", rawHeader{key: 999, version: 50, corr: 4, clientID: 2, id: "id"},
			RequestHeader{APIKey: 999, APIVersion: 50, CorrelationID: 4, ClientID: strPtr("id")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, body, err := ParseRequestHeader(tc.in.bytes("BODY"))
			if err != nil {
				t.Fatal(err)
			}
			if h.APIKey != tc.want.APIKey || h.APIVersion != tc.want.APIVersion || h.CorrelationID != tc.want.CorrelationID {
				t.Fatalf("got %+v, want %+v", h, tc.want)
			}
			if (h.ClientID == nil) != (tc.want.ClientID == nil) || h.ClientID != nil && *h.ClientID != *tc.want.ClientID {
				t.Fatalf("client id %v, want %v", h.ClientID, tc.want.ClientID)
			}
			if string(body) != "BODY" {
				t.Fatalf("body %q", body)
			}
		})
	}
}

func TestParseRequestHeaderMalformed(t *testing.T) {
	for name, in := range map[string][]byte{
		"empty":                  nil,
		"seven bytes":            rawHeader{key: 3, version: 1, clientID: -100}.bytes("")[:7],
		"no client id length":    rawHeader{key: 3, version: 1, clientID: -100}.bytes(""),
		"half client id length":  rawHeader{key: 3, version: 1, clientID: -100}.bytes("\x00"),
		"client id length -2":    rawHeader{key: 3, version: 1, clientID: -2}.bytes("xx"),
		"client id past the end": rawHeader{key: 3, version: 1, clientID: 10, id: "abc"}.bytes(""),
		"v2 missing tags":        rawHeader{key: 3, version: 9, clientID: 1, id: "a"}.bytes(""),
		"v2 tag count too big":   rawHeader{key: 3, version: 9, clientID: 1, id: "a", tags: []byte{5, 0, 0}}.bytes(""),
		"v2 tag size past end":   rawHeader{key: 3, version: 9, clientID: 1, id: "a", tags: []byte{1, 0, 9, 1}}.bytes(""),
		"v2 truncated tag":       rawHeader{key: 3, version: 9, clientID: 1, id: "a", tags: []byte{1, 0x80}}.bytes(""),
		"v2 overlong uvarint": rawHeader{key: 3, version: 9, clientID: 1, id: "a",
			tags: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}}.bytes(""),
	} {
		if _, _, err := ParseRequestHeader(in); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// testRequests are requests at non-flexible and flexible versions, as real
// clients send them.
func testRequests(t testing.TB) []kmsg.Request {
	var reqs []kmsg.Request
	add := func(r kmsg.Request, versions ...int16) {
		for _, v := range versions {
			r.SetVersion(v)
			// Encode and decode to get an independent copy per version.
			c := kmsg.RequestForKey(r.Key())
			c.SetVersion(v)
			if err := c.ReadFrom(r.AppendTo(nil)); err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, c)
		}
	}

	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "floe-test", "1.0.0"
	add(av, 0, 1, 2, 3, 4)

	md := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"orders", "payments"} {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		md.Topics = append(md.Topics, mt)
	}
	add(md, 1, 4, 8, 9, 12)

	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = -1, 30000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Partition = 3
	pp.Records = buildBatch(t, "gzip", 1_700_000_000_000, sampleRecords())
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	add(pr, 3, 7, 9, 11)

	fr := kmsg.NewPtrFetchRequest()
	fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes = 500, 1, 50<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "orders"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 3, 12345, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	add(fr, 4, 11, 12)

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "group-a"
	fc.CoordinatorKeys = []string{"group-a"}
	add(fc, 0, 2, 3, 4)

	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID = kmsg.StringPtr("txn-1")
	ip.TransactionTimeoutMillis = 60000
	add(ip, 0, 1, 2, 4)

	cs := kmsg.NewPtrControlledShutdownRequest()
	cs.BrokerID = 4
	add(cs, 0, 1, 3)
	return reqs
}

// TestRequestRoundTrip sends kmsg requests through kmsg's own request
// formatter (as franz-go writes them on the wire) and back through
// ReadFrame, ParseRequestHeader and DecodeRequest.
func TestRequestRoundTrip(t *testing.T) {
	for i, req := range testRequests(t) {
		for _, clientID := range []*string{nil, strPtr(""), strPtr("floe-client")} {
			var f *kmsg.RequestFormatter
			if clientID == nil {
				f = kmsg.NewRequestFormatter()
			} else {
				f = kmsg.NewRequestFormatter(kmsg.FormatterClientID(*clientID))
			}
			corr := int32(1000 + i)
			wire := f.AppendRequest(nil, req, corr)
			if req.Key() == 7 && req.GetVersion() == 0 {
				// kmsg's formatter stops after the v0 header and writes
				// neither body nor size: build the frame by hand.
				wire = frameOf(rawHeader{key: 7, version: 0, corr: corr, clientID: -100}.bytes(string(req.AppendTo(nil))))
			}
			frame, err := ReadFrame(bytes.NewReader(wire), DefaultMaxRequestSize)
			if err != nil {
				t.Fatal(err)
			}
			hdr, body, err := ParseRequestHeader(frame)
			if err != nil {
				t.Fatalf("key %d v%d: %v", req.Key(), req.GetVersion(), err)
			}
			if hdr.APIKey != req.Key() || hdr.APIVersion != req.GetVersion() || hdr.CorrelationID != corr {
				t.Fatalf("header %+v for key %d v%d", hdr, req.Key(), req.GetVersion())
			}
			wantID := clientID
			if req.Key() == 7 && req.GetVersion() == 0 {
				wantID = nil // header v0 has no client id
			}
			if (hdr.ClientID == nil) != (wantID == nil) || hdr.ClientID != nil && *hdr.ClientID != *wantID {
				t.Fatalf("key %d v%d: client id %v, want %v", req.Key(), req.GetVersion(), hdr.ClientID, wantID)
			}
			got, err := DecodeRequest(hdr, body)
			if err != nil {
				t.Fatalf("key %d v%d: %v", req.Key(), req.GetVersion(), err)
			}
			if got.Key() != req.Key() || got.GetVersion() != req.GetVersion() {
				t.Fatalf("decoded key %d v%d", got.Key(), got.GetVersion())
			}
			if !bytes.Equal(got.AppendTo(nil), req.AppendTo(nil)) {
				t.Fatalf("key %d v%d: decoded request encodes differently", req.Key(), req.GetVersion())
			}
		}
	}

	// Spot-check decoded fields, not just re-encoding.
	var produce9 kmsg.Request
	for _, r := range testRequests(t) {
		if r.Key() == 0 && r.GetVersion() == 9 {
			produce9 = r
		}
	}
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, produce9, 1)
	hdr, body, err := ParseRequestHeader(frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	req, err := DecodeRequest(hdr, body)
	if err != nil {
		t.Fatal(err)
	}
	pr := req.(*kmsg.ProduceRequest)
	if pr.Version != 9 || pr.Acks != -1 || pr.Topics[0].Topic != "orders" || pr.Topics[0].Partitions[0].Partition != 3 {
		t.Fatalf("%+v", pr)
	}
	if _, err := ValidateProduced(pr.Topics[0].Partitions[0].Records); err != nil {
		t.Fatalf("records did not survive: %v", err)
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	md.Topics = make([]kmsg.MetadataRequestTopic, 2)
	full := md.AppendTo(nil)
	for name, tc := range map[string]struct {
		hdr  RequestHeader
		body []byte
	}{
		"unknown key":        {RequestHeader{APIKey: 999}, nil},
		"negative key":       {RequestHeader{APIKey: -1}, nil},
		"negative version":   {RequestHeader{APIKey: 3, APIVersion: -1}, full},
		"version above kmsg": {RequestHeader{APIKey: 18, APIVersion: 99}, []byte{0}},
		"truncated body":     {RequestHeader{APIKey: 3, APIVersion: 1}, full[:len(full)-1]},
		"empty body":         {RequestHeader{APIKey: 0, APIVersion: 9}, nil},
		"array count lie":    {RequestHeader{APIKey: 3, APIVersion: 1}, []byte{0x7f, 0xff, 0xff, 0xff}},
	} {
		if req, err := DecodeRequest(tc.hdr, tc.body); !errors.Is(err, ErrMalformed) || req != nil {
			t.Errorf("%s: %v %v", name, req, err)
		}
	}
	// Trailing bytes are ignored, as Kafka does.
	if _, err := DecodeRequest(RequestHeader{APIKey: 3, APIVersion: 1}, append(full, 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
}

func TestAppendResponse(t *testing.T) {
	av := kmsg.NewPtrApiVersionsResponse()
	av.SetVersion(3)
	av.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 4}}
	avBody := av.AppendTo(nil)

	md := kmsg.NewPtrMetadataResponse()
	md.SetVersion(9)
	md.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: "h", Port: 9092}}
	mdBody := md.AppendTo(nil)

	md8 := kmsg.NewPtrMetadataResponse()
	md8.SetVersion(8)
	md8Body := md8.AppendTo(nil)

	av0 := kmsg.NewPtrApiVersionsResponse() // v0 answer to an unknown version
	av0.ErrorCode = kerr.UnsupportedVersion.Code
	av0Body := av0.AppendTo(nil)

	for _, tc := range []struct {
		name string
		hdr  RequestHeader
		resp kmsg.Response
		want []byte // after the size
	}{
		{"api versions v3: header v0, no tag byte", RequestHeader{APIKey: 18, APIVersion: 3, CorrelationID: 0x01020304}, av,
			append([]byte{1, 2, 3, 4}, avBody...)},
		{"api versions v99 answered with v0", RequestHeader{APIKey: 18, APIVersion: 99, CorrelationID: 7}, av0,
			append([]byte{0, 0, 0, 7}, av0Body...)},
		{"metadata v9: header v1, tag byte", RequestHeader{APIKey: 3, APIVersion: 9, CorrelationID: -2}, md,
			append([]byte{0xff, 0xff, 0xff, 0xfe, 0}, mdBody...)},
		{"metadata v8: header v0", RequestHeader{APIKey: 3, APIVersion: 8, CorrelationID: 9}, md8,
			append([]byte{0, 0, 0, 9}, md8Body...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("keep")
			out := AppendResponse(append([]byte{}, prefix...), tc.hdr, tc.resp)
			if !bytes.HasPrefix(out, prefix) {
				t.Fatal("dst prefix lost")
			}
			out = out[len(prefix):]
			if size := binary.BigEndian.Uint32(out); int(size) != len(out)-4 {
				t.Fatalf("size %d for %d bytes", size, len(out)-4)
			}
			if !bytes.Equal(out[4:], tc.want) {
				t.Fatalf("got  % x\nwant % x", out[4:], tc.want)
			}
		})
	}
}

// TestApiVersionsAboveKnown sends ApiVersions at a version no one knows over
// TCP, as a newer client would, and expects the KIP-511 v0 answer rather
// than a closed connection.
func TestApiVersionsAboveKnown(t *testing.T) {
	b := newTestBroker(t)
	c, err := net.Dial("tcp", b.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// Header v2 with tags, then a body of fields we do not know.
	req := rawHeader{key: 18, version: 42, corr: 31337, clientID: 3, id: "new", tags: []byte{0}}.bytes("\x04next\x021\x07future\x00")
	if _, err := c.Write(frameOf(req)); err != nil {
		t.Fatal(err)
	}
	frame, err := ReadFrame(c, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(frame)); corr != 31337 {
		t.Fatalf("correlation id %d", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse() // v0, right after the v0 header
	if err := resp.ReadFrom(frame[4:]); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d", resp.ErrorCode)
	}
	var found bool
	for _, k := range resp.ApiKeys {
		found = found || k.ApiKey == 18 && k.MinVersion == 0 && k.MaxVersion == 4
	}
	if !found {
		t.Fatalf("no ApiVersions range in %+v", resp.ApiKeys)
	}
}

// TestHeaderVersionMatchesKmsg checks the cached flexible-version table
// against kmsg's own IsFlexible for every key and version it knows, and a
// few beyond.
func TestHeaderVersionMatchesKmsg(t *testing.T) {
	var keys int
	for key := range int16(1000) {
		req := kmsg.RequestForKey(key)
		if req == nil {
			if requestHeaderVersion(key, 0) != 1 {
				t.Fatalf("unknown key %d is not header v1", key)
			}
			continue
		}
		keys++
		for v := range req.MaxVersion() + 4 {
			req.SetVersion(v)
			want := 1
			switch {
			case key == 7 && v == 0:
				want = 0
			case req.IsFlexible():
				want = 2
			}
			if got := requestHeaderVersion(key, v); got != want {
				t.Fatalf("key %d v%d: header v%d, want v%d", key, v, got, want)
			}
		}
	}
	if keys < 60 {
		t.Fatalf("only %d keys known", keys)
	}
}
