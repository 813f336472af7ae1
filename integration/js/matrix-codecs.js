// kafkajs 2.2.4 ships only none and gzip. The other Kafka codecs come from
// packages that need no native compilation (CI has no compiler toolchain):
//   snappy: kafkajs-snappy (snappyjs, pure JS; raw snappy out, raw and
//           xerial-framed snappy in)
//   lz4:    lz4js (pure JS LZ4 frame format, which is what Kafka's magic-2
//           batches carry); the kafkajs LZ4 codec packages (kafkajs-lz4,
//           lz4-kafkajs) wrap `lz4`, which builds with node-gyp
//   zstd:   zstd-codec (zstd compiled to JavaScript/WebAssembly by
//           Emscripten); @kafkajs/zstd wraps cppzst, which builds with
//           node-gyp
// The lz4 and zstd adapters below are the kafkajs codec interface
// (compress(encoder) -> Buffer, decompress(Buffer) -> Buffer) around those.
const SnappyCodec = require('kafkajs-snappy')
const lz4 = require('lz4js')
const { ZstdCodec } = require('zstd-codec')

const LZ4Codec = () => ({
  async compress (encoder) { return Buffer.from(lz4.compress(encoder.buffer)) },
  async decompress (buffer) { return Buffer.from(lz4.decompress(buffer)) }
})

// zstdStreaming loads the Emscripten module once.
function zstdStreaming () {
  return new Promise(resolve => ZstdCodec.run(zstd => resolve(new zstd.Streaming())))
}

async function register (CompressionTypes, CompressionCodecs) {
  const zstd = await zstdStreaming()
  CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
  CompressionCodecs[CompressionTypes.LZ4] = LZ4Codec
  CompressionCodecs[CompressionTypes.ZSTD] = () => ({
    async compress (encoder) {
      const out = zstd.compress(encoder.buffer, 3)
      if (!out) throw new Error('zstd-codec: compress failed')
      return Buffer.from(out)
    },
    // Streaming decompression: frames written by other producers need not
    // carry their content size.
    async decompress (buffer) {
      const out = zstd.decompress(buffer)
      if (!out) throw new Error('zstd-codec: decompress failed')
      return Buffer.from(out)
    }
  })
}

module.exports = { register }
