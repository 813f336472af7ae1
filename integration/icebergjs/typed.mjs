// node typed.mjs <REST catalog url> <namespace> <table>
//
// scan.mjs for typed tables: loads the table through floe's Iceberg REST
// catalog with iceberg-js and reads every row with icebird, printing
// {"snapshot": "<id>", "rows": [...]} with each row as icebird gives it,
// whatever its columns: int64s (bigint) as decimal strings, bytes
// (Uint8Array) as {"bytes": "<base64>"}, timestamps as exact µs (decimal
// strings), dates as days since the epoch, decimals as the doubles
// hyparquet makes of them, structs as objects, lists as arrays, maps as
// icebird renders them (objects).
//
// hyparquet decodes every BYTE_ARRAY column as UTF-8, binary ones too
// (its utf8 option, which icebird does not pass on, defaults to true):
// strings are decoded here with a fatal decoder, and bytes that are not
// UTF-8 stay bytes, so that a binary column's value is its UTF-8 text or
// its bytes, never U+FFFD. Shims and the read itself: read.mjs.

import { args, readTable } from './read.mjs'

const utf8 = new TextDecoder('utf-8', { fatal: true })
const { metadata, rows } = await readTable(...args('typed.mjs'), {
  dateFromDays: days => days,
  stringFromBytes: bytes => {
    if (!bytes) return bytes
    try {
      return utf8.decode(bytes)
    } catch {
      return bytes
    }
  },
})

const plain = v => {
  if (v === null || v === undefined) return null
  if (typeof v === 'bigint') return v.toString()
  if (v instanceof Uint8Array) return { bytes: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') }
  if (v instanceof Date) throw new Error(`unexpected Date ${v.toISOString()}`)
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [k, plain(x)]))
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return Array.from(v, plain)
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]))
  return v
}
console.log(JSON.stringify({ snapshot: String(metadata['current-snapshot-id']), rows: rows.map(plain) }))
