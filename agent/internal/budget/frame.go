package budget

import (
	"sync/atomic"

	"floe/internal/bufpool"
)

// Frame is one request frame charged to a budget. It is released — claim
// returned, buffer recycled — when its last reference goes: the connection
// holds one until the request is answered, and each produced batch that
// aliases the frame holds one until the PUT of its object has read it
// (objects are PUT from the frames, not copied out of them). So an acks=0
// produce, answered at once, still holds its frame until its batches are
// stored, and a produce frame is released before its flush's commit.
type Frame struct {
	claim *Claim
	pool  *bufpool.Pool // nil: buf is not recycled
	buf   []byte
	refs  atomic.Int32
	// spoiled: a failed PUT may still be reading buf; never recycle it.
	spoiled atomic.Bool
}

// NewFrame holds buf, charged to claim, with one reference. pool, if not
// nil, takes buf back when the last reference goes.
func NewFrame(claim *Claim, pool *bufpool.Pool, buf []byte) *Frame {
	f := &Frame{claim: claim, pool: pool, buf: buf}
	f.refs.Store(1)
	return f
}

// Bytes is the frame's buffer, valid until the last Unref.
func (f *Frame) Bytes() []byte { return f.buf }

// Ref adds a reference.
func (f *Frame) Ref() { f.refs.Add(1) }

// Spoil keeps the buffer from being recycled when the frame is released.
func (f *Frame) Spoil() { f.spoiled.Store(true) }

// Unref drops a reference; the last one releases the claim and recycles
// the buffer.
func (f *Frame) Unref() {
	if f.refs.Add(-1) != 0 {
		return
	}
	f.claim.Release()
	if f.pool != nil && !f.spoiled.Load() {
		f.pool.Put(f.buf)
	}
	f.buf = nil
}
