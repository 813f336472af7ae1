package kafkaproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func frameOf(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestReadFrame(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 20_000) // 320 KB: grows past frameChunk
	stream := append(append(append(frameOf([]byte("first")), frameOf(nil)...), frameOf(big)...), frameOf([]byte("last"))...)
	r := bytes.NewReader(stream)
	for _, want := range [][]byte{[]byte("first"), {}, big, []byte("last")} {
		got, err := ReadFrame(iotest.HalfReader(r), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || got == nil {
			t.Fatalf("frame of %d bytes, want %d", len(got), len(want))
		}
	}
	if _, err := ReadFrame(r, 1<<20); err != io.EOF {
		t.Fatalf("at end: %v", err)
	}

	// The returned frame is the caller's: reading the next one must not
	// reuse it.
	r = bytes.NewReader(append(frameOf([]byte("aaaa")), frameOf([]byte("bbbb"))...))
	a, _ := ReadFrame(r, 100)
	if _, err := ReadFrame(r, 100); err != nil || string(a) != "aaaa" {
		t.Fatalf("first frame now %q, %v", a, err)
	}

	// Exactly max is fine.
	if got, err := ReadFrame(bytes.NewReader(frameOf(make([]byte, 100))), 100); err != nil || len(got) != 100 {
		t.Fatalf("frame at max: %d %v", len(got), err)
	}
}

func TestReadFrameErrors(t *testing.T) {
	// Too large or negative: rejected from the size alone, nothing else read.
	for _, size := range []uint32{101, 0xffffffff, 0x80000000} {
		in := binary.BigEndian.AppendUint32(nil, size)
		in = append(in, "untouched"...)
		r := bytes.NewReader(in)
		if _, err := ReadFrame(r, 100); !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("size %d: %v", int32(size), err)
		}
		if r.Len() != len("untouched") {
			t.Fatalf("size %d: read %d body bytes", int32(size), len("untouched")-r.Len())
		}
	}
	for name, in := range map[string][]byte{
		"short size":         {0, 0},
		"short body":         append(binary.BigEndian.AppendUint32(nil, 10), "12345"...),
		"short large body":   append(binary.BigEndian.AppendUint32(nil, 200_000), make([]byte, 150_000)...),
		"size but no body":   binary.BigEndian.AppendUint32(nil, 1),
		"short at the chunk": append(binary.BigEndian.AppendUint32(nil, frameChunk+1), make([]byte, frameChunk)...),
	} {
		if _, err := ReadFrame(bytes.NewReader(in), 4*frameChunk); err != io.ErrUnexpectedEOF {
			t.Errorf("%s: %v", name, err)
		}
	}
	boom := errors.New("boom")
	if _, err := ReadFrame(iotest.ErrReader(boom), 100); err != boom {
		t.Fatalf("reader error: %v", err)
	}
}

// BenchmarkReadFrame reads 16 KiB frames, the size of a typical produce
// request: one allocation per frame.
func BenchmarkReadFrame(b *testing.B) {
	frame := frameOf(make([]byte, 16<<10))
	r := bytes.NewReader(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		r.Reset(frame)
		if _, err := ReadFrame(r, DefaultMaxRequestSize); err != nil {
			b.Fatal(err)
		}
	}
}
