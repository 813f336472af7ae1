package agent

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/storage/mem"
)

// BenchmarkReadProduceFrame reads a 2 MiB produce request — 16 partitions
// of 128 KiB batches, what a franz-go producer sends under load — as the
// connection reader does (recycled buffer, charged to the request budget,
// released as the batcher would), against kafkaproto.ReadFrame (a fresh
// buffer grown chunk by chunk).
func BenchmarkReadProduceFrame(b *testing.B) {
	body := make([]byte, 2<<20)
	binary.BigEndian.PutUint16(body, uint16(kmsg.Produce))
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	frame = append(frame, body...)

	b.Run("ReadFrame", func(b *testing.B) {
		r := bytes.NewReader(nil)
		b.ReportAllocs()
		b.SetBytes(int64(len(frame)))
		for b.Loop() {
			r.Reset(frame)
			if _, err := kafkaproto.ReadFrame(r, kafkaproto.DefaultMaxRequestSize); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("conn", func(b *testing.B) {
		a := New(DefaultConfig(), nil, mem.New(), nil)
		c := &conn{a: a}
		r := bytes.NewReader(nil)
		br := bufio.NewReaderSize(r, 64<<10)
		c.br = br
		b.ReportAllocs()
		b.SetBytes(int64(len(frame)))
		for b.Loop() {
			r.Reset(frame)
			br.Reset(r)
			h, _, err := c.readFrame()
			if err != nil {
				b.Fatal(err)
			}
			h.Unref()
		}
	})
}
