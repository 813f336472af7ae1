package compactor

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"floe/metadata"
)

func TestPlanMerges(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	// obj parses "key:level:size:ageSeconds".
	obj := func(s string) metadata.ObjectInfo {
		var (
			key              string
			level, size, age int
		)
		parts := strings.Split(s, ":")
		key = parts[0]
		fmt.Sscan(parts[1], &level)
		fmt.Sscan(parts[2], &size)
		fmt.Sscan(parts[3], &age)
		return metadata.ObjectInfo{Key: key, Level: level, Size: int64(size),
			CreatedAt: now.Add(-time.Duration(age) * time.Second), State: metadata.ObjectLive}
	}
	cfg := PlanConfig{FanIn: 3, MaxWait: time.Minute, MaxLevel: 2, MaxBytes: 100}
	for _, tc := range []struct {
		name string
		objs []string
		want []string // "level:key,key,..."
	}{
		{"empty", nil, nil},
		{"fewer than fan-in and young: wait", []string{"a:0:1:5", "b:0:1:4"}, nil},
		{"full group", []string{"a:0:1:5", "b:0:1:4", "c:0:1:3"}, []string{"0:a,b,c"}},
		{"full group then a young remainder", []string{"a:0:1:5", "b:0:1:4", "c:0:1:3", "d:0:1:2", "e:0:1:1"}, []string{"0:a,b,c"}},
		{"old remainder merged", []string{"a:0:1:500", "b:0:1:400", "c:0:1:300", "d:0:1:200", "e:0:1:100"}, []string{"0:a,b,c", "0:d,e"}},
		{"one old object alone is not a merge", []string{"a:0:1:500"}, nil},
		{"levels are planned separately", []string{"a:1:1:9", "x:0:1:8", "b:1:1:7", "y:0:1:6", "c:1:1:5", "z:0:1:4"},
			[]string{"0:x,y,z", "1:a,b,c"}},
		{"max level is never merged", []string{"a:2:1:500", "b:2:1:400", "c:2:1:300"}, nil},
		{"key-compacted objects are never merged", []string{"a:1000:1:500", "b:1000:1:400", "c:1000:1:300"}, nil},
		{"size cap cuts a group", []string{"a:0:40:5", "b:0:40:4", "c:0:40:3", "d:0:40:2"}, []string{"0:a,b"}},
		{"an object at the size cap stays alone and splits the run",
			[]string{"a:0:10:500", "big:0:100:400", "b:0:10:300", "c:0:10:200", "d:0:10:100"}, []string{"0:b,c,d"}},
		{"replaced objects are ignored", []string{"a:0:1:5", "b:0:1:4", "r:0:1:3"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []metadata.ObjectInfo
			for _, s := range tc.objs {
				o := obj(s)
				if o.Key == "r" {
					o.State = metadata.ObjectReplaced
				}
				objs = append(objs, o)
			}
			var got []string
			for _, j := range PlanMerges(objs, cfg, now) {
				got = append(got, fmt.Sprintf("%d:%s", j.Level, strings.Join(j.Keys, ",")))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("PlanMerges: %q, want %q", got, tc.want)
			}
		})
	}
}

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
