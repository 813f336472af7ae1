package compactor

import (
	"testing"
	"time"

	"floe/metadata"
)

func TestRetentionStart(t *testing.T) {
	now := time.UnixMilli(10_000)
	row := func(base, end, bytes, maxTS int64) metadata.IndexEntry {
		return metadata.IndexEntry{BaseOffset: base, EndOffset: end, ByteLength: bytes, MaxTimestamp: maxTS}
	}
	rows := []metadata.IndexEntry{row(0, 10, 100, 1000), row(10, 20, 100, 5000), row(20, 30, 100, 9000)}
	for _, tc := range []struct {
		name            string
		logStart        int64
		retMs, retBytes int64
		want            int64
		rowsOverride    []metadata.IndexEntry
	}{
		{name: "nothing expired", retMs: 9500, retBytes: -1, want: 0},
		{name: "first expired", retMs: 8000, retBytes: -1, want: 10},
		{name: "two expired", retMs: 4000, retBytes: -1, want: 20},
		{name: "all expired", retMs: 0, retBytes: -1, want: 30},
		{name: "unlimited", retMs: -1, retBytes: -1, want: 0},
		{name: "size keeps at least retention.bytes", retMs: -1, retBytes: 150, want: 10},
		{name: "size exactly two rows", retMs: -1, retBytes: 200, want: 10},
		{name: "size zero drops all", retMs: -1, retBytes: 0, want: 30},
		{name: "log start inside a row counts the row", logStart: 15, retMs: -1, retBytes: 100, want: 20},
		{name: "an unexpired row stops the walk", retMs: 8000, retBytes: -1, want: 0,
			rowsOverride: []metadata.IndexEntry{row(0, 10, 100, 9999), row(10, 20, 100, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := rows
			if tc.rowsOverride != nil {
				rs = tc.rowsOverride
			}
			if got := retentionStart(rs, tc.logStart, now, tc.retMs, tc.retBytes); got != tc.want {
				t.Fatalf("retentionStart: %d, want %d", got, tc.want)
			}
		})
	}
}
