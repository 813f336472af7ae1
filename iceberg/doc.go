// Package iceberg turns topics into Apache Iceberg tables and serves them.
//
// A Converter (run by the compactor process) follows every topic whose
// floe.iceberg.enabled config is true: under one lease per table it reads
// the topic's committed batches from the objects in offset order — control
// batches and aborted transactional records left out, every codec
// decompressed — builds Arrow record batches, writes them as Parquet
// through iceberg-go, and commits one snapshot per table per cycle into
// iceberg-go's SQL catalog, which lives in floe's metadata database. Each
// commit records every partition's next offset (the table property and the
// snapshot summary key floe.next-offsets) in the same atomic catalog update
// as its data files, and every cycle resumes from the committed value, so a
// crash anywhere neither duplicates nor skips a row; files written by a
// cycle that did not commit are orphans that maintenance deletes.
//
// RESTHandler serves the catalog to engines (DuckDB, Trino, Spark,
// PyIceberg, iceberg-go) as a read-only Iceberg REST catalog.
//
// A topic's table has the same columns as every other (Schema: partition,
// offset, timestamp, timestamp_type, key, value, headers) unless its
// floe.iceberg.value.mode asks for typed columns: then its values are
// decoded with the schema registry's schemas into columns beside a _kafka
// struct (TypedSchema), the table's schema evolving as writer schemas
// come, and records that cannot be rows go to its dead-letter table
// (DLQSchema), committed first so that each record is in exactly one of
// the two.
//
// Rooms: convert.go (the cycle, the walk over records), layout.go and
// rows.go (binary tables), typed_config.go (the modes), typed_avro.go
// (Avro schemas as Iceberg columns), typed_decode.go (Avro payloads into
// Arrow), typed_proto.go and typed_json.go (Protobuf and JSON Schema, the
// same), typed_infer.go (json mode's inferred columns), typed_rows.go
// (typed layout), typed_route.go (a record's key and value resolved,
// checked and appended, or sent to the dead letters), typed_convert.go
// (the typed cycle: segments, evolution, rounds, commits), dlq.go (dead
// letters), write.go (how Parquet is written, bounding what a cycle holds:
// ConverterConfig.MemoryBytes), zstd.go (Parquet pages' zstd encoders),
// catalog.go, rest.go, maintenance.go, metrics.go.
package iceberg
