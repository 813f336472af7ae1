package iceberg

import (
	"context"
	"iter"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// What a cycle's writing holds: the terms of ConverterConfig.MemoryBytes.
//
// iceberg-go's writer is a pipeline: a feeder and fanout workers (by
// default five, behind a queue of five) take the batches the cycle builds
// and hand them to a writer per partition, behind a queue of 64 batches.
// A cycle builds batches faster than Parquet compresses them, so the
// queues filled and a cycle held most of what it read (149 MiB live
// converting 56 MiB of orders into 4 MiB files). One fanout worker and
// queues of one batch leave six batches in flight: the one being built,
// the feeder's, the fanout queue's, the worker's, the partition writer's
// queue's and the one it writes.
//
// A file's writer keeps the row group it writes in memory, compressed,
// until the row group is done, and a file ends only at the end of a row
// group: at iceberg-go's default row group of 128 MiB, a target file size
// below it was not kept (files of up to 128 MiB, all of it held).
// Row groups of a quarter of the file (Iceberg Java's default ratio: 128
// MiB row groups in 512 MiB files) make files of the target size and hold
// a quarter of one. Each column's page and dictionary being encoded come
// on top, up to writePageBytes and writeDictBytes each.
const (
	// writeRowGroupsPerFile is how many row groups a data file is cut in.
	writeRowGroupsPerFile = 4
	// writePageBytes is the Parquet data page size (Iceberg's default is
	// 1 MiB): each column's page is encoded in memory until it is cut.
	writePageBytes = 256 << 10
	// writeDictBytes bounds a column chunk's dictionary (Iceberg's
	// default 2 MiB), past which the column is written plain: a
	// dictionary is held until its row group is done.
	writeDictBytes = 256 << 10
)

// writeRecords writes batches as data files of tbl, of about fileSize
// bytes each, holding what ConverterConfig.MemoryBytes counts.
func writeRecords(ctx context.Context, tbl *table.Table, as *arrow.Schema, batches iter.Seq2[arrow.RecordBatch, error], fileSize int64) iter.Seq2[iceberg.DataFile, error] {
	wt, err := writeTable(tbl, fileSize)
	if err != nil {
		return func(yield func(iceberg.DataFile, error) bool) { yield(nil, err) }
	}
	return table.WriteRecords(ctx, wt, as, batches, table.WithTargetFileSize(fileSize),
		table.WithMaxWriteWorkers(1), table.WithRecordBatchBufferSize(1))
}

// writeTable is tbl with the Parquet properties of files of fileSize
// bytes, for the writer alone (a cycle's, and maintenance's rewrites,
// compact): the table keeps its own, which are not committed (a reader
// sees the table as it was).
func writeTable(tbl *table.Table, fileSize int64) (*table.Table, error) {
	b, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		return nil, err
	}
	if err := b.SetProperties(iceberg.Properties{
		table.ParquetRowGroupSizeBytesKey: strconv.FormatInt(rowGroupBytes(fileSize), 10),
		table.ParquetPageSizeBytesKey:     strconv.Itoa(writePageBytes),
		table.ParquetDictSizeBytesKey:     strconv.Itoa(writeDictBytes),
	}); err != nil {
		return nil, err
	}
	meta, err := b.Build()
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, nil), nil
}

// rowGroupBytes is the row group size of files of fileSize bytes.
func rowGroupBytes(fileSize int64) int64 { return max(fileSize/writeRowGroupsPerFile, 1) }
