package agent

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn is a bare Kafka connection for requests no client would send.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	corr int32 // of try's last request
}

func dialRaw(t *testing.T, ta *testAgent) *rawConn { return dialRawAddr(t, ta.KafkaAddr()) }

func dialRawAddr(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c}
}

// try sends req (at its version) and decodes its answer.
func (rc *rawConn) try(req kmsg.Request) (kmsg.Response, error) {
	rc.corr++
	if _, err := rc.c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, rc.corr)); err != nil {
		return nil, err
	}
	_, b, err := rc.read()
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		_, n := binary.Uvarint(b) // the header's empty tag section
		b = b[n:]
	}
	return resp, resp.ReadFrom(b)
}

func (rc *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	rc.t.Helper()
	resp, err := rc.try(req)
	if err != nil {
		rc.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// rawToken sends a bare SASL token (after a v0 handshake) and returns the
// bare answer.
func (rc *rawConn) rawToken(tok []byte) []byte {
	rc.t.Helper()
	if _, err := rc.c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...)); err != nil {
		rc.t.Fatal(err)
	}
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(rc.c, size[:]); err != nil {
		rc.t.Fatal(err)
	}
	ans := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(rc.c, ans); err != nil {
		rc.t.Fatal(err)
	}
	return ans
}

// send writes req at version with correlation id corr.
func (rc *rawConn) send(req kmsg.Request, version int16, corr int32) {
	rc.t.Helper()
	req.SetVersion(version)
	if _, err := rc.c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, corr)); err != nil {
		rc.t.Fatal(err)
	}
}

// sendHeader writes a frame of a bare header for any key and version.
func (rc *rawConn) sendHeader(key, version int16, corr int32) {
	rc.t.Helper()
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = append(b, 0, 3, 'r', 'a', 'w', 0) // client id, then an empty tag section or body byte
	if _, err := rc.c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)); err != nil {
		rc.t.Fatal(err)
	}
}

// read returns the next answer's correlation id and the rest of it, or
// io.EOF once the agent closed the connection.
func (rc *rawConn) read() (int32, []byte, error) {
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(rc.c, size[:]); err != nil {
		return 0, nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(rc.c, body); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(body)), body[4:], nil
}

func (rc *rawConn) wantClosed(what string) {
	rc.t.Helper()
	corr, _, err := rc.read()
	if !errors.Is(err, io.EOF) {
		rc.t.Fatalf("%s: got an answer (correlation %d) or %v, want the connection closed as Kafka closes it", what, corr, err)
	}
}

// TestUnsupportedRequestsCloseAsKafka: where Kafka 4's socket server
// closes the connection without an answer, so does floe: an api key it
// does not know, a key only controllers serve, a version above the range.
func TestUnsupportedRequestsCloseAsKafka(t *testing.T) {
	ta := newParallelAgent(t)
	for _, tc := range []struct {
		what         string
		key, version int16
	}{
		{"unknown api key", 1000, 0},
		{"controller-only BrokerHeartbeat", int16(kmsg.BrokerHeartbeat), 0},
		{"DescribeConfigs above its range", int16(kmsg.DescribeConfigs), 99},
		{"IncrementalAlterConfigs above its range", int16(kmsg.IncrementalAlterConfigs), 2},
	} {
		rc := dialRaw(t, ta)
		rc.sendHeader(tc.key, tc.version, 5)
		rc.wantClosed(tc.what)
	}
	// ApiVersions is the exception, at any version (KIP-511).
	rc := dialRaw(t, ta)
	rc.sendHeader(int16(kmsg.ApiVersions), 77, 9)
	corr, body, err := rc.read()
	if err != nil || corr != 9 {
		t.Fatalf("ApiVersions v77: correlation %d, %v", corr, err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	if err := resp.ReadFrom(body); err != nil || resp.ErrorCode != 35 {
		t.Fatalf("ApiVersions v77: %+v %v", resp, err)
	}
}

// TestAdminAPIsAnswered is the regression test for the admin APIs that
// closed the connection before floe served them: at every version it
// advertises, each is answered on the same connection, in order, and the
// answer parses at that version.
func TestAdminAPIsAnswered(t *testing.T) {
	ta := newParallelAgent(t)
	rc := dialRaw(t, ta)
	corr := int32(100)
	for _, key := range []kmsg.Key{kmsg.AlterConfigs, kmsg.DescribeLogDirs, kmsg.ElectLeaders, kmsg.IncrementalAlterConfigs,
		kmsg.AlterPartitionAssignments, kmsg.ListPartitionReassignments, kmsg.DescribeClientQuotas, kmsg.AlterClientQuotas,
		kmsg.UpdateFeatures, kmsg.DescribeProducers, kmsg.DescribeTopicPartitions} {
		v, ok := apis.Lookup(int16(key))
		if !ok {
			t.Fatalf("%s is not registered", kmsg.NameForKey(int16(key)))
		}
		for version := v.AdvertisedMin; version <= v.Max; version++ {
			req := kmsg.RequestForKey(int16(key))
			rc.send(req, version, corr)
			got, body, err := rc.read()
			if err != nil || got != corr {
				t.Fatalf("%s v%d: correlation %d, %v", kmsg.NameForKey(int16(key)), version, got, err)
			}
			if req.IsFlexible() {
				body = body[1:] // the response header's empty tag section
			}
			resp := req.ResponseKind()
			resp.SetVersion(version)
			if err := resp.ReadFrom(body); err != nil {
				t.Fatalf("%s v%d: answer does not parse: %v", kmsg.NameForKey(int16(key)), version, err)
			}
			corr++
		}
	}
}
