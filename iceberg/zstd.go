package iceberg

import (
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// Parquet compresses each page on its own (zstd, iceberg-go's default),
// with an encoder arrow-go takes from a pool: klauspost's encoder keeps a
// history of twice its window, 16 MiB at its default 8 MiB window, for
// pages that are at most writePageBytes (dictionary pages writeDictBytes;
// maintenance's rewrites write as a cycle does, writeTable). Each
// writer compressing held one, 18 MiB with its tables: the largest term
// of a cycle's memory beside its batches. pageWindow covers a page whole,
// so the pages compress as they did, in an eighth of that.
const pageWindow = 1 << 20

// pageZstd is arrow-go's zstd codec, its page encoding with encoders of
// pageWindow; decoding and streams are arrow-go's.
type pageZstd struct {
	arrowZstd
	pools sync.Map // zstd.EncoderLevel → *sync.Pool of *zstd.Encoder
}

// arrowZstd is what arrow-go's zstd codec implements.
type arrowZstd interface {
	compress.ErrorCodec
	compress.StreamingCodec
}

func init() {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		panic(err)
	}
	az, ok := c.(arrowZstd)
	if !ok {
		panic("arrow-go's zstd codec decodes without errors or streams")
	}
	compress.RegisterCodec(compress.Codecs.Zstd, &pageZstd{arrowZstd: az})
}

func (c *pageZstd) Encode(dst, src []byte) []byte {
	return c.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

// EncodeLevel compresses one page as arrow-go does (zero frames, literal
// entropy coding, one goroutine), with a window of pageWindow.
func (c *pageZstd) EncodeLevel(dst, src []byte, level int) []byte {
	l := zstd.SpeedDefault
	if level != compress.DefaultCompressionLevel {
		l = zstd.EncoderLevelFromZstd(level)
	}
	p, _ := c.pools.LoadOrStore(l, &sync.Pool{New: func() any {
		enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l),
			zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true), zstd.WithWindowSize(pageWindow))
		if err != nil {
			panic(err) // the options are constants
		}
		return enc
	}})
	pool := p.(*sync.Pool)
	enc := pool.Get().(*zstd.Encoder)
	defer pool.Put(enc)
	return enc.EncodeAll(src, dst[:0])
}
