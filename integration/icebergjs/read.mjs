// What scan.mjs and typed.mjs share: a table loaded through floe's Iceberg
// REST catalog with iceberg-js and read with icebird (metadata, Avro
// manifests, Parquet through hyparquet): no code shared with iceberg-go.
//
// Three shims, all in this process, none in node_modules:
//  1. fetch: icebird and hyparquet fetch every file; Node's fetch has no
//     file:// (floe dev's warehouse is a directory), so file:// URLs are
//     read from disk here, with Range.
//  2. int64 ids: iceberg-js parses the load result with JSON.parse, which
//     rounds snapshot ids beyond 2^53. Integers that large are turned into
//     strings before iceberg-js parses them.
//  3. Avro deflate: icebird inflates manifest blocks with
//     hyparquet-compressors' gunzip, which throws on iceberg-go's manifests
//     ("RangeError: offset is out of bounds"). A module hook hands icebird's
//     Avro reader a gunzip that is zlib's raw inflate (Avro's deflate codec
//     is raw RFC 1951).
// And hyparquet's value parsers (which icebird gives no way to set) are
// changed: timestamps stay exact µs, and each script sets its own.

import { readFile } from 'node:fs/promises'
import { register } from 'node:module'
import { fileURLToPath } from 'node:url'

// Shim 3 must be in place before icebird is loaded.
register('./shim-hooks.mjs', import.meta.url)
const { IcebergRestCatalog } = await import('iceberg-js')
const { icebergRead } = await import('icebird')
const { DEFAULT_PARSERS } = await import('hyparquet/src/convert.js')

// Shim 1.
const netFetch = globalThis.fetch
globalThis.fetch = async (input, init) => {
  const url = input instanceof Request ? input.url : String(input)
  if (!url.startsWith('file:')) return netFetch(input, init)
  const data = await readFile(fileURLToPath(url))
  if ((init?.method ?? 'GET') === 'HEAD') {
    return new Response(null, { status: 200, headers: { 'content-length': String(data.length) } })
  }
  const range = new Headers(init?.headers).get('range')
  if (!range) return new Response(data, { status: 200 })
  const m = /^bytes=(\d+)-(\d*)$/.exec(range)
  if (!m) throw new Error(`unsupported range ${range}`)
  const start = Number(m[1])
  const end = m[2] === '' ? data.length : Number(m[2]) + 1
  return new Response(data.subarray(start, end), {
    status: 206,
    headers: { 'content-range': `bytes ${start}-${end - 1}/${data.length}` },
  })
}

// Shim 2: quotes integer literals outside strings whose magnitude is beyond
// Number.MAX_SAFE_INTEGER.
function quoteBigInts(text) {
  let out = ''
  let i = 0
  while (i < text.length) {
    const c = text[i]
    if (c === '"') {
      let j = i + 1
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1
      out += text.slice(i, j + 1)
      i = j + 1
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      let j = i + 1
      while (j < text.length && /[0-9.eE+-]/.test(text[j])) j++
      const lit = text.slice(i, j)
      const big = /^-?\d+$/.test(lit) && !Number.isSafeInteger(Number(lit))
      out += big ? `"${lit}"` : lit
      i = j
    } else {
      out += c
      i++
    }
  }
  return out
}

async function bigIntSafeFetch(input, init) {
  const res = await netFetch(input, init)
  if (!(res.headers.get('content-type') || '').includes('application/json')) return res
  return new Response(quoteBigInts(await res.text()), { status: res.status, headers: res.headers })
}

// readTable loads namespace.name through the REST catalog at baseUrl and
// reads every row with icebird, hyparquet's value parsers set first
// (timestamps always exact µs, plus the caller's: parsers).
export async function readTable(baseUrl, namespace, name, parsers = {}) {
  DEFAULT_PARSERS.timestampFromMicroseconds = micros => micros
  Object.assign(DEFAULT_PARSERS, parsers)
  const catalog = new IcebergRestCatalog({ baseUrl, fetch: bigIntSafeFetch })
  const metadata = await catalog.loadTable({ namespace: [namespace], name })
  const rows = await icebergRead({ tableUrl: metadata.location, metadata })
  return { metadata, rows }
}

// args are the scripts' arguments: <REST catalog url> <namespace> <table>.
export function args(script) {
  const [baseUrl, namespace, name] = process.argv.slice(2)
  if (!name) {
    console.error(`usage: node ${script} <REST catalog url> <namespace> <table>`)
    process.exit(2)
  }
  return [baseUrl, namespace, name]
}
