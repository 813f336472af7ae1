package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn is one Kafka connection spoken by hand with kmsg, so that a
// scenario sees a response's exact size on the wire and holds a socket
// without a client's background work (metadata refreshes, heartbeats).
type rawConn struct {
	c    net.Conn
	corr int32
	f    *kmsg.RequestFormatter
}

func dialRaw(addr string) (*rawConn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	return &rawConn{c: c, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID("floe-scale"))}, nil
}

func (r *rawConn) Close() error { return r.c.Close() }

// do sends req and decodes its answer into resp (which must be req's
// response kind at req's version). It returns the response frame's size
// in bytes, size prefix included.
func (r *rawConn) do(req kmsg.Request, resp kmsg.Response) (int, error) {
	r.corr++
	buf := r.f.AppendRequest(nil, req, r.corr)
	r.c.SetDeadline(time.Now().Add(2 * time.Minute))
	defer r.c.SetDeadline(time.Time{})
	if _, err := r.c.Write(buf); err != nil {
		return 0, err
	}
	var size [4]byte
	if _, err := io.ReadFull(r.c, size[:]); err != nil {
		return 0, err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	body := make([]byte, n)
	if _, err := io.ReadFull(r.c, body); err != nil {
		return 0, err
	}
	if n < 4 || int32(binary.BigEndian.Uint32(body)) != r.corr {
		return 0, fmt.Errorf("response of %d bytes does not answer correlation id %d", n, r.corr)
	}
	body = body[4:]
	// Flexible responses carry a tagged-field section in their header,
	// except ApiVersions (KIP-511). floe sends none: its count is 0.
	if req.IsFlexible() && req.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			return 0, fmt.Errorf("unexpected tagged fields in a response header")
		}
		body = body[1:]
	}
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		return 0, fmt.Errorf("decode %T: %w", resp, err)
	}
	return n + 4, nil
}
