package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

// maxPipelined bounds the requests one connection may have in flight; the
// reader stops reading (TCP backpressure) beyond it.
const maxPipelined = 64

// conn is one client connection. One reader goroutine (serve) decodes
// requests and starts a handler goroutine per request; one writer goroutine
// writes the answers strictly in request order. Produce requests of one
// connection enqueue their batches in request order (produceTurn) so that
// pipelined produces to a partition keep their order.
type conn struct {
	a    *Agent
	nc   net.Conn
	log  *slog.Logger
	zone string // client's zone from its client id, if any

	queue       chan *inflight
	produceTurn chan struct{} // closed when the previous produce has enqueued; reader-owned

	closeOnce sync.Once
}

// request is one decoded request handed to a handler.
type request struct {
	c   *conn
	hdr kafkaproto.RequestHeader
	req kmsg.Request
	// enqueued is the turn of a Produce: wait on prev before enqueueing
	// batches, close next once they are enqueued (or the request failed).
	prev <-chan struct{}
	next chan struct{}
}

// inflight is a request whose answer the writer waits for.
type inflight struct {
	size int64 // frame bytes held in the agent's request budget
	hdr  kafkaproto.RequestHeader
	done chan struct{}
	resp kmsg.Response // nil: send nothing (acks=0 produce)
	err  error         // non-nil: close the connection
}

func newConn(a *Agent, nc net.Conn) *conn {
	turn := make(chan struct{})
	close(turn)
	return &conn{
		a:           a,
		nc:          nc,
		log:         a.log.With("remote", nc.RemoteAddr().String()),
		queue:       make(chan *inflight, maxPipelined),
		produceTurn: turn,
	}
}

// stopReading makes the reader return soon; requests already read are still
// answered.
func (c *conn) stopReading() {
	if tc, ok := c.nc.(*net.TCPConn); ok {
		_ = tc.CloseRead()
		return
	}
	_ = c.nc.SetReadDeadline(time.Now())
}

func (c *conn) close() { c.closeOnce.Do(func() { c.nc.Close() }) }

// serve runs the reader in the calling goroutine and the writer beside it;
// it returns when both are done.
func (c *conn) serve() {
	c.a.metrics.connections.Inc()
	defer c.a.metrics.connections.Dec()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	c.readLoop()
	close(c.queue)
	<-writerDone
	c.close()
}

func (c *conn) readLoop() {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		frame, err := kafkaproto.ReadFrame(br, c.a.cfg.MaxRequestSize)
		if err != nil {
			if errors.Is(err, kafkaproto.ErrFrameTooLarge) {
				c.log.Warn("closing connection: request too large", "max", c.a.cfg.MaxRequestSize)
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isTimeout(err) {
				c.log.Debug("read failed", "err", err)
			}
			return
		}
		c.a.metrics.requestBytes.Add(float64(len(frame) + 4))
		size := int64(len(frame))
		if !c.a.reqBudget.acquire(size, c.a.isClosing) {
			return
		}
		hdr, body, err := kafkaproto.ParseRequestHeader(frame)
		if err != nil {
			c.a.reqBudget.release(size)
			c.log.Warn("closing connection: malformed request header", "err", err)
			return
		}
		if hdr.ClientID != nil && c.zone == "" {
			c.zone = zoneFromClientID(*hdr.ClientID)
		}
		f := &inflight{size: size, hdr: hdr, done: make(chan struct{})}
		if resp, ok := c.unsupported(hdr); ok {
			f.resp = resp
			close(f.done)
			c.queue <- f
			if resp == nil {
				return
			}
			continue
		}
		req, err := kafkaproto.DecodeRequest(hdr, body)
		if err != nil {
			c.a.reqBudget.release(size)
			c.log.Warn("closing connection: malformed request", "api_key", hdr.APIKey, "version", hdr.APIVersion, "err", err)
			return
		}
		r := &request{c: c, hdr: hdr, req: req}
		if hdr.APIKey == int16(kmsg.Produce) {
			r.prev = c.produceTurn
			r.next = make(chan struct{})
			c.produceTurn = r.next
		}
		c.queue <- f
		go c.run(r, f)
	}
}

// unsupported answers requests at versions we do not handle. It returns
// (nil, true) when the connection must be closed, as Kafka does for
// requests it cannot parse.
func (c *conn) unsupported(hdr kafkaproto.RequestHeader) (kmsg.Response, bool) {
	if apis.Supported(hdr.APIKey, hdr.APIVersion) {
		return nil, false
	}
	if hdr.APIKey == int16(kmsg.ApiVersions) {
		// KIP-511: a v0 body with UNSUPPORTED_VERSION and our ranges, so the
		// client can retry at a version we speak.
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ApiKeys = apis.ApiVersionsKeys()
		return resp, true
	}
	c.log.Warn("closing connection: unsupported api version", "api_key", hdr.APIKey, "version", hdr.APIVersion)
	return nil, true
}

func (c *conn) run(r *request, f *inflight) {
	defer close(f.done)
	defer func() {
		if r.next != nil {
			select {
			case <-r.next:
			default:
				close(r.next)
			}
		}
	}()
	defer func() {
		// A handler bug must cost one connection, never the process.
		if v := recover(); v != nil {
			c.log.Error("handler panic", "api_key", r.hdr.APIKey, "version", r.hdr.APIVersion, "panic", v)
			f.resp, f.err = nil, fmt.Errorf("handler panic: %v", v)
		}
	}()
	start := time.Now()
	ctx := c.a.ctx
	resp, err := c.a.handle(ctx, r)
	f.resp, f.err = resp, err
	c.a.metrics.observeRequest(r.hdr.APIKey, time.Since(start))
	if err != nil {
		c.log.Warn("closing connection", "api_key", r.hdr.APIKey, "version", r.hdr.APIVersion, "err", err)
	}
}

func (c *conn) writeLoop() {
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	var buf []byte
	broken := false
	for f := range c.queue {
		<-f.done
		// The request's frame (which produce batches alias) is no longer
		// needed once answered.
		c.a.reqBudget.release(f.size)
		if broken {
			continue
		}
		if f.err != nil || (f.resp == nil && f.hdr.APIKey != int16(kmsg.Produce)) {
			broken = true
			c.close()
			continue
		}
		if f.resp == nil {
			continue // acks=0: Kafka sends no answer
		}
		f.resp.SetVersion(respVersion(f))
		buf = kafkaproto.AppendResponse(buf[:0], f.hdr, f.resp)
		c.a.metrics.responseBytes.Add(float64(len(buf)))
		if _, err := bw.Write(buf); err != nil {
			broken = true
			c.close()
			continue
		}
		// Flush when nothing else is ready, so pipelined answers share writes.
		if len(c.queue) == 0 {
			if err := bw.Flush(); err != nil {
				broken = true
				c.close()
			}
		}
	}
	if !broken {
		_ = bw.Flush()
	}
}

// respVersion is the version to encode an answer at: the request's, except
// for the v0 ApiVersions answer to a version we do not speak.
func respVersion(f *inflight) int16 {
	if f.hdr.APIKey == int16(kmsg.ApiVersions) && !apis.Supported(f.hdr.APIKey, f.hdr.APIVersion) {
		return 0
	}
	return f.hdr.APIVersion
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// zoneFromClientID extracts ZONE from a client id containing floe_az=ZONE
// (separated from the rest by commas or spaces).
func zoneFromClientID(id string) string {
	i := strings.Index(id, "floe_az=")
	if i < 0 {
		return ""
	}
	z := id[i+len("floe_az="):]
	if j := strings.IndexAny(z, ", ;"); j >= 0 {
		z = z[:j]
	}
	return z
}
