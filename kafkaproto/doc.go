// Package kafkaproto owns the Kafka wire format as floe speaks it: size-prefixed
// frames, request and response headers (including the flexible-version rules
// clients disagree about), decoding request bodies into franz-go kmsg types,
// encoding answers (Fetch answers as the parts a vectored write sends, their
// record sets uncopied), the table of API versions an agent advertises and
// handles, and the v2 record batch helpers: header parsing, the validation a
// Kafka broker applies to produced batches and their records (ValidateProduced,
// ValidateRecords), splitting a produced records field (SplitBatches), the
// walk of stored batches with their absolute offsets that fetch, the compactor
// and the Iceberg converter share (WalkBatches), base-offset rewrite,
// record decoding with every Kafka compression codec, and rewriting a
// batch's records into another codec (Recompress, for the compactor).
//
// kafkaproto does no I/O beyond reading one frame from an io.Reader, keeps no
// state between calls, and imports only the standard library, kmsg, kerr and
// the compression modules. It must never panic on bytes that came off the
// network: every length, count and varint is bounds-checked against the bytes
// that remain, and nothing is allocated from an untrusted count without that
// bound.
package kafkaproto
