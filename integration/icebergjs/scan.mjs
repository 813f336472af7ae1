// node scan.mjs <REST catalog url> <namespace> <table>
//
// Loads a table through floe's Iceberg REST catalog with iceberg-js and
// reads every row with icebird (metadata, Avro manifests, Parquet through
// hyparquet): no code shared with iceberg-go. Prints one JSON object:
// {"snapshot": "<current snapshot id>", "rows": [{partition, offset,
// timestamp (µs), timestamp_type, key, value, headers: [{key, value}]}]},
// int64s as decimal strings, binary as base64, null as null.
//
// Shims and the read itself: read.mjs. Binary columns stay bytes rather
// than being decoded as UTF-8.

import { args, readTable } from './read.mjs'

const { metadata, rows } = await readTable(...args('scan.mjs'), { stringFromBytes: bytes => bytes })

const decoder = new TextDecoder('utf-8', { fatal: true })
const b64 = v => {
  if (v === null || v === undefined) return null
  if (!(v instanceof Uint8Array)) throw new Error(`binary value ${typeof v} ${v}`)
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')
}
const int64 = v => {
  if (typeof v !== 'bigint') throw new Error(`int64 value ${typeof v} ${v}`)
  return v.toString()
}
const out = rows.map(r => ({
  partition: r.partition,
  offset: int64(r.offset),
  timestamp: int64(r.timestamp),
  timestamp_type: r.timestamp_type,
  key: b64(r.key),
  value: b64(r.value),
  headers: r.headers.map(h => ({ key: decoder.decode(h.key), value: b64(h.value) })),
}))
console.log(JSON.stringify({ snapshot: String(metadata['current-snapshot-id']), rows: out }))
