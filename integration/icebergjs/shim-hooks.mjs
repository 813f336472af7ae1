// Module hooks for scan.mjs (registered with node:module's register): icebird's
// Avro reader gets, in place of hyparquet-compressors, a module whose gunzip is
// zlib's raw inflate. hyparquet-compressors' own gunzip throws "RangeError:
// offset is out of bounds" on the deflate blocks of iceberg-go's manifests.
// Every other importer of hyparquet-compressors (hyparquet's Parquet pages)
// gets the real package.

const avroDeflate = 'data:text/javascript,' + encodeURIComponent(
  "import { inflateRawSync } from 'node:zlib'\n" +
  'export function gunzip(input) { return new Uint8Array(inflateRawSync(input)) }\n')

export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'hyparquet-compressors' && /\/icebird\/src\/avro\//.test(context.parentURL ?? '')) {
    return { url: avroDeflate, shortCircuit: true }
  }
  return nextResolve(specifier, context)
}
