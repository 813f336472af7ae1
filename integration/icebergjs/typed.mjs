// node typed.mjs <REST catalog url> <namespace> <table>
//
// scan.mjs for typed tables: loads the table through floe's Iceberg REST
// catalog with iceberg-js and reads every row with icebird, printing
// {"snapshot": "<id>", "rows": [...]} with each row as icebird gives it,
// whatever its columns: int64s (bigint) as decimal strings, binary
// (Uint8Array) as base64, timestamps as exact µs (decimal strings),
// dates as days since the epoch, decimals as the doubles hyparquet makes
// of them, structs as objects, lists as arrays, maps as icebird renders
// them. Shims 1 to 3 are scan.mjs's, copied.

import { readFile } from 'node:fs/promises'
import { register } from 'node:module'
import { fileURLToPath } from 'node:url'

// Shim 3 must be in place before icebird is loaded.
register('./shim-hooks.mjs', import.meta.url)
const { IcebergRestCatalog } = await import('iceberg-js')
const { icebergRead } = await import('icebird')
const { DEFAULT_PARSERS } = await import('hyparquet/src/convert.js')

const [baseUrl, namespace, name] = process.argv.slice(2)
if (!name) {
  console.error('usage: node typed.mjs <REST catalog url> <namespace> <table>')
  process.exit(2)
}

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

DEFAULT_PARSERS.timestampFromMicroseconds = micros => micros
DEFAULT_PARSERS.dateFromDays = days => days

const catalog = new IcebergRestCatalog({ baseUrl, fetch: bigIntSafeFetch })
const metadata = await catalog.loadTable({ namespace: [namespace], name })
const rows = await icebergRead({ tableUrl: metadata.location, metadata })

const plain = v => {
  if (v === null || v === undefined) return null
  if (typeof v === 'bigint') return v.toString()
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')
  if (v instanceof Date) throw new Error(`unexpected Date ${v.toISOString()}`)
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [k, plain(x)]))
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return Array.from(v, plain)
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]))
  return v
}
console.log(JSON.stringify({ snapshot: String(metadata['current-snapshot-id']), rows: rows.map(plain) }))
