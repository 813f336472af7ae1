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
// Every table has the same columns (Schema): partition, offset, timestamp,
// timestamp_type, key, value, headers.
package iceberg
