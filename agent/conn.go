package agent

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/internal/authz"
	"floe/agent/internal/budget"
	"floe/agent/internal/control"
	"floe/internal/bufpool"
	"floe/kafkaproto"
)

// connBufSize is the size of each connection's read and write buffers:
// enough to batch small requests and answers; large frames and record sets
// bypass them. Both come from pools: the write buffer is held only while
// answers are being written (writers), the read buffer until the client
// has sent nothing for readerIdle (readers).
const connBufSize = 16 << 10

// readers are the connections' read buffers. A connection that has sent
// nothing for readerIdle gives its buffer back and waits for its next byte
// without one, so thousands of idle connections cost no buffer each.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, connBufSize) }}

// readerIdle is how long a connection keeps its read buffer while it sends
// nothing: long enough that a client sending steadily never pays the extra
// read a connection without its buffer makes for its next frame.
const readerIdle = time.Second

// conn is one client connection. One reader goroutine (serve) decodes
// requests and starts a handler goroutine per request; one writer goroutine
// writes the answers strictly in request order. Produce requests of one
// connection enqueue their batches in request order (produceTurn) so that
// pipelined produces to a partition keep their order.
type conn struct {
	a   *Agent
	ln  *listener // the listener it came in on
	nc  net.Conn
	log *slog.Logger
	id  connIdentity // who the requests run as (principal.go)
	// sasl is the authentication state of a SASL listener's connection
	// (sasl.go), nil on other listeners; reader-owned.
	sasl *saslConn
	// authz caches the connection's authorization decisions (authz.go).
	authz authz.Cache
	// remoteHost is the peer's address without its port.
	remoteHost string
	zone       string // client's zone from its first request's client id, if any
	// zoneKnown: zone was set (reader-owned).
	zoneKnown bool

	queue       chan *inflight
	produceTurn chan struct{} // closed when the previous produce has enqueued; reader-owned
	// br is the read buffer, from readers, nil while the connection idles;
	// src is what it reads (reader-owned).
	br  *bufio.Reader
	src connSource
	// maxFrame is the size of the largest frame read (reader-owned): a
	// frame's buffer starts at up to that size (readFrame).
	maxFrame int
	// inFlight counts requests read and not yet answered, lastWrite is
	// when the writer last sent an answer (unix nanos): a connection with
	// either is not idle.
	inFlight  atomic.Int32
	lastWrite atomic.Int64
	// mutedUntil: a client over a quota is throttled, no request of it
	// served before (unix nanos; quota.go).
	mutedUntil atomic.Int64

	closeOnce sync.Once
}

// request is one decoded request handed to a handler.
type request struct {
	c   *conn
	hdr kafkaproto.RequestHeader
	req kmsg.Request
	// frame is the request's frame; a produce takes a reference per batch
	// it hands to the batcher (which aliases the frame).
	frame *budget.Frame
	// prev and next are the turn of a Produce: wait on prev before
	// enqueueing batches, close next once they are enqueued (or the
	// request failed).
	prev <-chan struct{}
	next chan struct{}
	// answer, set by a handler whose answers hold pooled buffers, writes
	// and frees them (see answerParts); nil: encoded into one frame.
	answer answerParts
	// fetchHeld is what a Fetch answer's record buffers hold of the fetch
	// budget, handed to answer.release once the answer is written.
	fetchHeld int64
}

// answerParts writes the answers of a handler whose answers hold pooled
// buffers: as the slices an answer is made of, its large byte fields
// straight from the buffers that hold them, which it frees once the answer
// is written or never will be. Fetch's record sets are the one case.
type answerParts interface {
	// appendParts frames resp for hdr as consecutive slices, built in buf
	// and parts (the writer's scratch, returned for the next answer).
	appendParts(buf []byte, parts [][]byte, hdr kafkaproto.RequestHeader, resp kmsg.Response) ([]byte, [][]byte)
	// release frees what the answer holds: its buffers, and held of the
	// fetch budget. resp is nil when the handler failed.
	release(resp kmsg.Response, held int64)
}

// inflight is a request whose answer the writer waits for.
type inflight struct {
	frame *budget.Frame // the request's frame; the writer drops its reference once answered
	hdr   kafkaproto.RequestHeader
	done  chan struct{}
	resp  kmsg.Response // nil: send nothing (acks=0 produce)
	// raw, when set, is sent as a bare size-prefixed token instead of
	// resp (SASL after a v0 handshake).
	raw []byte
	err error // non-nil: close the connection
	// answer and fetchHeld: see request; the writer releases them.
	answer    answerParts
	fetchHeld int64
}

func newConn(a *Agent, l *listener, nc net.Conn) *conn {
	turn := make(chan struct{})
	close(turn)
	return &conn{
		a:           a,
		ln:          l,
		nc:          nc,
		sasl:        saslFor(l),
		log:         a.log.With("remote", nc.RemoteAddr().String()),
		remoteHost:  remoteIP(nc),
		queue:       make(chan *inflight, max(a.cfg.QueuedMaxRequests, 1)),
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
	if !c.tlsHandshake() {
		c.close()
		return
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	c.readLoop()
	close(c.queue)
	<-writerDone
	c.close()
	c.a.coord.shares.connClosed(c)
}

func (c *conn) readLoop() {
	if c.connectionThrottled() { // connection_creation_rate (quota.go)
		return
	}
	c.src.nc = c.nc
	c.takeReader()
	defer c.releaseReader()
	for {
		h, frame, err := c.readFrame()
		if err != nil {
			remote := c.nc.RemoteAddr().String()
			switch {
			case errors.Is(err, kafkaproto.ErrFrameTooLarge):
				c.a.limitHit("socket.request.max.bytes", "remote", remote, "err", err)
			case errors.Is(err, errIdle):
				c.a.limitHit("connections.max.idle.ms", "remote", remote, "idle", c.a.cfg.ConnectionsMaxIdle)
			case isTimeout(err) && !c.a.isClosing():
				c.a.limitHit("request.read.timeout", "remote", remote, "timeout", c.a.cfg.RequestReadTimeout)
			case !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isTimeout(err) && !errors.Is(err, errStopped):
				c.log.Debug("read failed", "err", err)
			}
			return
		}
		if s := c.sasl; s != nil && s.v0 && s.ex != nil {
			// A raw token after a v0 handshake: no Kafka header.
			answer, ok := c.saslStep(frame)
			f := &inflight{frame: h, raw: append([]byte{}, answer...), done: make(chan struct{})}
			if !ok {
				f.raw, f.err = nil, errSASLClose // v0 failures just close
			}
			close(f.done)
			c.enqueue(f)
			if !ok {
				return
			}
			continue
		}
		hdr, body, err := kafkaproto.ParseRequestHeader(frame)
		if err != nil {
			h.Unref()
			c.log.Warn("closing connection: malformed request header", "err", err)
			return
		}
		if !c.zoneKnown {
			// Once, before any handler runs: handlers read zone.
			c.zoneKnown = true
			if hdr.ClientID != nil {
				c.zone = zoneFromClientID(*hdr.ClientID)
			}
		}
		f := &inflight{frame: h, hdr: hdr, done: make(chan struct{})}
		if resp, ok := c.unsupported(hdr); ok {
			f.resp = resp
			close(f.done)
			c.enqueue(f)
			if resp == nil {
				return
			}
			continue
		}
		req, err := kafkaproto.DecodeRequest(hdr, body)
		if err != nil {
			h.Unref()
			c.log.Warn("closing connection: malformed request", "api_key", hdr.APIKey, "version", hdr.APIVersion, "err", err)
			return
		}
		if c.sasl != nil {
			handled, err := c.saslGate(f, req)
			if handled {
				if f.resp == nil && err != nil {
					f.err = err // refused: close without an answer
				}
				close(f.done)
				c.enqueue(f)
				if err != nil {
					return
				}
				continue
			}
		}
		r := &request{c: c, hdr: hdr, req: req, frame: h}
		if hdr.APIKey == int16(kmsg.Produce) {
			r.prev = c.produceTurn
			r.next = make(chan struct{})
			c.produceTurn = r.next
		}
		c.enqueue(f)
		go c.run(r, f)
	}
}

// enqueue hands f to the writer; with QueuedMaxRequests answers pending,
// the reader waits (and reads nothing meanwhile).
func (c *conn) enqueue(f *inflight) {
	c.inFlight.Add(1)
	select {
	case c.queue <- f:
	default:
		c.a.limitHit("queued.max.requests", "remote", c.nc.RemoteAddr().String(), "max", cap(c.queue))
		c.queue <- f
	}
}

// errStopped: the agent is shutting down while a reader waited for budget.
var errStopped = errors.New("agent is shutting down")

// errIdle: the connection sent no request for ConnectionsMaxIdle.
var errIdle = errors.New("connection idle")

// frameStart is how much of a frame's buffer is charged and allocated
// before more than that has arrived; the buffer then grows fourfold as it
// fills, so what a frame holds is at most about four times what its peer
// has sent. Frames that arrived whole in the read buffer take one exact
// buffer at once, and so do frames no larger than the largest the
// connection has sent: a closed-loop producer's frames vary from 1 to
// 16 MB, and growing each from 128 KiB copied up to a third more than the
// frame and left buffers of five sizes to the pool. A peer must have sent
// a frame of a size in full before an announced frame of that size is
// charged whole. 128 KiB is above the buffer pool's 4 KiB floor, so a
// produce frame's first buffer is recycled too.
const frameStart = 128 << 10

// newRequestBudget splits the request budget: an eighth is the reserve of
// small frames (whole frames of at most frameStart bytes), so that they are
// read while large frames wait; the rest bounds large frames.
func newRequestBudget(total int64) *budget.Budget {
	reserve := total / 8
	return budget.New(total-reserve, reserve)
}

// readFrame reads one size-prefixed request frame into a buffer charged to
// the agent's request budget, as it arrives: a peer that announces a frame
// larger than any it sent before and sends it slowly, or not at all, holds
// only about what it sent (see frameStart), and the frame must be complete
// within RequestReadTimeout of its first byte, time spent waiting for
// budget included. Readers wait for budget (TCP backpressure) rather than
// allocate beyond it; a waiting reader still notices its peer going away
// (waitStop). Frames of at most frameStart bytes are small: they have a
// reserve of the budget of their own, so a client's ApiVersions, Metadata
// or SASL handshake is read while large frames wait (agent/internal/budget).
// Before a frame begins, the connection may be idle for ConnectionsMaxIdle.
// Produce frames, the big and frequent ones, use recycled buffers; no other
// request is known not to keep references into its frame after it is
// answered.
func (c *conn) readFrame() (*budget.Frame, []byte, error) {
	var sz [4]byte
	if err := c.awaitFrame(); err != nil {
		return nil, nil, err
	}
	br := c.br
	c.waitMuted() // a client over a quota: read nothing more of it, hold no budget (quota.go)
	readBy := time.Now().Add(c.a.cfg.RequestReadTimeout)
	c.setReadDeadline(readBy)
	if _, err := io.ReadFull(br, sz[:]); err != nil {
		return nil, nil, err
	}
	n, err := kafkaproto.FrameSize(sz, c.a.cfg.MaxRequestSize)
	if err != nil {
		return nil, nil, err
	}
	c.a.metrics.requestBytes.Add(float64(n) + 4)
	var pool *bufpool.Pool
	if n >= 2 {
		// The API key leads the header; Peek waits for 2 bytes that are
		// part of this frame.
		k, err := br.Peek(2)
		if err != nil {
			return nil, nil, err
		}
		if int16(binary.BigEndian.Uint16(k)) == int16(kmsg.Produce) {
			pool = c.a.batcher.bufs
		}
	}
	alloc := func(size int) []byte {
		if pool != nil {
			return pool.Get(size)
		}
		return make([]byte, size)
	}
	size := n
	if size > frameStart && br.Buffered() < size {
		size = min(n, max(frameStart, br.Buffered(), c.maxFrame))
	}
	claim := c.a.reqBudget.Claim(n <= frameStart)
	read := 0
	stop := c.waitStop(readBy, func() int { return n - read - br.Buffered() })
	if err := claim.Grow(int64(size), stop); err != nil {
		claim.Release()
		return nil, nil, err
	}
	buf := alloc(size)
	fail := func(err error) (*budget.Frame, []byte, error) {
		budget.NewFrame(claim, pool, buf).Unref()
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, nil, err
	}
	for {
		m, err := io.ReadFull(br, buf[read:])
		read += m
		if err != nil {
			return fail(err)
		}
		if read == n {
			break
		}
		// The buffer is full and more is coming: grow it.
		grown := min(4*len(buf), n)
		if err := claim.Grow(int64(grown-len(buf)), stop); err != nil {
			return fail(err)
		}
		next := alloc(grown)
		copy(next, buf)
		if pool != nil {
			pool.Put(buf)
		}
		buf = next
	}
	c.maxFrame = max(c.maxFrame, n)
	return budget.NewFrame(claim, pool, buf), buf, nil
}

// errFrameLate: a frame was not whole within RequestReadTimeout of its
// first byte, while its reader waited for budget. A timeout, as when the
// wait was for the peer.
var errFrameLate = fmt.Errorf("frame incomplete at its deadline: %w", os.ErrDeadlineExceeded)

// waitStop ends a reader's wait for budget: when the agent closes, at the
// frame's deadline, or when the peer has closed and what it sent cannot
// complete the frame (missing: bytes of the frame not yet in the read
// buffer). Anything else goes on waiting.
func (c *conn) waitStop(readBy time.Time, missing func() int) budget.Stop {
	return func() error {
		switch {
		case c.a.isClosing():
			return errStopped
		case time.Now().After(readBy):
			return errFrameLate
		case peerGone(c.nc, missing()):
			return io.ErrUnexpectedEOF
		}
		return nil
	}
}

// awaitFrame waits for the first byte of the next frame. While nothing
// arrives for ConnectionsMaxIdle and the connection has no request in
// flight nor wrote an answer meanwhile, it is idle: errIdle. After
// readerIdle without a byte its read buffer goes back to the pool, and the
// byte that ends the wait is read without one (connSource hands it on).
func (c *conn) awaitFrame() error {
	idle := c.a.cfg.ConnectionsMaxIdle
	for {
		if c.a.isClosing() {
			return errStopped // Close stops reading; nothing of a new frame was read
		}
		var err error
		if c.br != nil {
			wait := readerIdle
			if idle > 0 {
				wait = min(wait, idle)
			}
			c.setReadDeadline(time.Now().Add(wait))
			if _, err = c.br.Peek(1); err == nil {
				return nil
			}
			if isTimeout(err) && c.br.Buffered() == 0 {
				c.releaseReader()
			}
		} else {
			if idle > 0 {
				c.setReadDeadline(time.Now().Add(idle))
			} else {
				c.setReadDeadline(time.Time{})
			}
			var n int
			if n, err = c.src.nc.Read(c.src.first[:]); n == 1 {
				c.src.held = true
				c.takeReader()
				return nil
			}
			if err == nil {
				continue
			}
		}
		if !isTimeout(err) || c.a.isClosing() {
			return err
		}
		if idle > 0 && c.inFlight.Load() == 0 && time.Since(time.Unix(0, c.lastWrite.Load())) >= idle {
			return errIdle
		}
		// Busy with answers, or not idle for long yet. A wait that timed
		// out consumed nothing, so the reader carries on.
	}
}

// takeReader gives the connection a read buffer from the pool.
func (c *conn) takeReader() {
	c.br = readers.Get().(*bufio.Reader)
	c.br.Reset(&c.src)
	c.a.metrics.readBuffers.Inc()
}

// releaseReader gives the read buffer back; it must hold no bytes.
func (c *conn) releaseReader() {
	if c.br == nil {
		return
	}
	c.br.Reset(nil)
	readers.Put(c.br)
	c.br = nil
	c.a.metrics.readBuffers.Dec()
}

// connSource is what a connection's read buffer reads from: the byte
// awaitFrame read while the connection had no buffer, then the connection.
type connSource struct {
	nc    net.Conn
	first [1]byte
	held  bool // first is the next byte of the stream
}

func (s *connSource) Read(p []byte) (int, error) {
	if s.held && len(p) > 0 {
		p[0], s.held = s.first[0], false
		return 1, nil
	}
	return s.nc.Read(p)
}

// setReadDeadline sets the connection's read deadline (tests may run a
// conn without one).
func (c *conn) setReadDeadline(t time.Time) {
	if c.nc != nil {
		_ = c.nc.SetReadDeadline(t)
	}
}

// unsupported answers requests at versions we do not handle. It returns
// (nil, true) when the connection must be closed, as Kafka does for
// requests it cannot parse.
//
// Kafka 4 answers only one such request: ApiVersions at any version
// (KIP-511: a v0 body with UNSUPPORTED_VERSION and its ranges). Its socket
// server checks every other header before the request reaches a handler
// (SocketServer.parseRequestHeader, ApiVersionManager.isApiEnabled) and
// closes the connection, without an answer, on an api key it does not
// know, on a key it knows that this listener does not serve (a
// controller-only key sent to a broker), and on a version outside the
// key's range. floe does the same, so a client sees what a Kafka broker
// would do. (Produce v0–v2 never get here: floe registers them as handled
// and 00_produce.go answers them.)
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
	why := "unsupported api version"
	if _, ok := apis.Lookup(hdr.APIKey); !ok {
		why = "api key not served"
	}
	c.log.Warn("closing connection: "+why, "api_key", hdr.APIKey, "api", kmsg.NameForKey(hdr.APIKey), "version", hdr.APIVersion)
	return nil, true
}

// ControlKey runs fn on each request of API key key (control.AnyKey:
// every key) before its handler, for tests, as kfake's ControlKey: fn may
// answer the request, fail it (the connection closes), delay it or only
// watch it. A function that handled a request is dropped unless keep.
func (a *Agent) ControlKey(key int16, keep bool, fn control.Func) { a.control.Key(key, keep, fn) }

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
			f.resp, f.err, f.answer, f.fetchHeld = nil, fmt.Errorf("handler panic: %v", v), r.answer, r.fetchHeld
		}
	}()
	start := time.Now()
	ctx := c.a.ctx
	resp, err, handled := c.a.control.Try(r.req)
	if !handled {
		resp, err = c.a.handle(ctx, r)
	}
	if err == nil {
		c.throttleAnswer(r, resp, time.Since(start)) // client quotas (quota.go)
	}
	f.resp, f.err, f.answer, f.fetchHeld = resp, err, r.answer, r.fetchHeld
	c.a.metrics.observeRequest(r.hdr.APIKey, time.Since(start))
	if err != nil {
		c.log.Warn("closing connection", "api_key", r.hdr.APIKey, "version", r.hdr.APIVersion, "err", err)
	}
}

// writers are the connections' write buffers. A connection holds one only
// while it has answers to write: thousands of idle connections (or
// consumers waiting in a long poll) then cost no buffer each.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, connBufSize) }}

func (c *conn) writeLoop() {
	var bw *bufio.Writer // from writers while answers are being written
	var buf []byte
	var parts [][]byte
	broken := false
	flush := func() {
		if bw != nil && !broken && bw.Buffered() > 0 {
			if err := bw.Flush(); err != nil {
				broken = true
				c.close()
			}
		}
	}
	// idle flushes and gives back what the writer holds between answers:
	// its write buffer, and a scratch grown past the buffer's size by one
	// large answer (a Metadata of thousands of partitions), which would
	// otherwise stay with the connection for its life.
	idle := func() {
		flush()
		if bw != nil {
			bw.Reset(nil)
			writers.Put(bw)
			bw = nil
			c.a.metrics.writeBuffers.Dec()
		}
		if cap(buf) > connBufSize {
			buf = nil
		}
	}
	defer idle()
	for {
		// Answers written so far go out before the writer waits, for the
		// next request or for the next answer: a pipelined answer must not
		// sit in the buffer while a later request waits for its flush.
		var f *inflight
		ok := true
		select {
		case f, ok = <-c.queue:
		default:
			idle()
			f, ok = <-c.queue
		}
		if !ok {
			break // the reader has stopped
		}
		select {
		case <-f.done:
		default:
			idle() // a long-polling fetch may wait for seconds
			<-f.done
		}
		// The request no longer needs its frame once answered (produce
		// batches still in the batcher hold their own references).
		f.frame.Unref()
		c.lastWrite.Store(time.Now().UnixNano())
		c.inFlight.Add(-1)
		if bw == nil {
			bw = writers.Get().(*bufio.Writer)
			bw.Reset(c.nc)
			c.a.metrics.writeBuffers.Inc()
		}
		buf, parts = c.writeAnswer(bw, buf, parts, f, &broken)
		// The parts point into the answer's record data (read-cache
		// ranges, fetch buffers): written, they must not keep it alive.
		clear(parts[:cap(parts)])
		// The answer's bytes are written (or never will be).
		if f.answer != nil {
			f.answer.release(f.resp, f.fetchHeld)
		}
	}
}

// writeAnswer writes f's answer, or closes the connection for an answer
// that must close it; broken is set once the connection is closed. buf and
// parts are the writer's scratch, returned for the next answer.
func (c *conn) writeAnswer(bw *bufio.Writer, buf []byte, parts [][]byte, f *inflight, broken *bool) ([]byte, [][]byte) {
	if *broken {
		return buf, parts
	}
	if f.raw != nil {
		buf = binary.BigEndian.AppendUint32(buf[:0], uint32(len(f.raw)))
		buf = append(buf, f.raw...)
		if _, err := bw.Write(buf); err != nil {
			*broken = true
			c.close()
		}
		return buf, parts
	}
	if f.err != nil || (f.resp == nil && f.hdr.APIKey != int16(kmsg.Produce)) {
		*broken = true
		c.close()
		return buf, parts
	}
	if f.resp == nil {
		return buf, parts // acks=0: Kafka sends no answer
	}
	f.resp.SetVersion(respVersion(f))
	if f.answer != nil {
		var ok bool
		if buf, parts, ok = c.writeParts(bw, buf, parts, f); !ok {
			*broken = true
			c.close()
		}
		return buf, parts
	}
	buf = kafkaproto.AppendResponse(buf[:0], f.hdr, f.resp)
	c.a.metrics.responseBytes.Add(float64(len(buf)))
	if _, err := bw.Write(buf); err != nil {
		*broken = true
		c.close()
	}
	return buf, parts
}

// writeParts writes an answer that f.answer frames as several slices with
// one vectored write after the answers buffered before it, instead of
// copied into one frame first. buf and parts are the writer's scratch,
// returned for the next answer; ok is false when the connection broke.
func (c *conn) writeParts(bw *bufio.Writer, buf []byte, parts [][]byte, f *inflight) ([]byte, [][]byte, bool) {
	buf, parts = f.answer.appendParts(buf, parts, f.hdr, f.resp)
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	c.a.metrics.responseBytes.Add(float64(n))
	if len(parts) == 1 {
		_, err := bw.Write(parts[0])
		return buf, parts, err == nil
	}
	if err := bw.Flush(); err != nil {
		return buf, parts, false
	}
	// WriteTo consumes its Buffers value (a copy of parts' header) and may
	// trim the slices in parts' array; parts is rebuilt for each answer.
	vec := net.Buffers(parts)
	_, err := vec.WriteTo(c.nc)
	return buf, parts, err == nil
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
