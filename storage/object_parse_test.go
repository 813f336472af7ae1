package storage

// The object footer's reader. floe never reads footers (see the format
// comment in object.go), so the parser lives with the tests that check
// the writer against it.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errCorruptObject is returned (wrapped) by parseObject when an object's
// magic, version, checksum or footer does not hold together.
var errCorruptObject = errors.New("storage: corrupt object")

func readRun(b []byte) Run {
	var r Run
	copy(r.TopicID[:], b[:16])
	r.Partition = int32(binary.BigEndian.Uint32(b[16:]))
	r.Offset = int64(binary.BigEndian.Uint64(b[20:]))
	r.Length = int64(binary.BigEndian.Uint64(b[28:]))
	r.Batches = int32(binary.BigEndian.Uint32(b[36:]))
	r.Records = int64(binary.BigEndian.Uint64(b[40:]))
	r.MinTimestamp = int64(binary.BigEndian.Uint64(b[48:]))
	r.MaxTimestamp = int64(binary.BigEndian.Uint64(b[56:]))
	return r
}

// compareRuns orders runs by topic id, then partition.
func compareRuns(a, b *Run) int {
	if c := bytes.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// parseObject checks the magic, version and checksum of a whole object and
// returns its runs in body order. Beyond the checksum it checks that the
// runs lie inside the body, in order and without overlap, and that each
// partition has one run, sorted by topic id then partition, as the writer
// lays them out; so a caller may slice the body by them, or search them,
// without further checks. Any mismatch returns an error wrapping
// errCorruptObject.
func parseObject(object []byte) ([]Run, error) {
	n := len(object)
	if n < minObjectSize {
		return nil, fmt.Errorf("%w: %d bytes is shorter than a footer", errCorruptObject, n)
	}
	if string(object[n-4:]) != objectMagic {
		return nil, fmt.Errorf("%w: bad magic %q", errCorruptObject, object[n-4:])
	}
	v := binary.BigEndian.Uint16(object[n-6:])
	if v != 1 && v != objectVersion {
		return nil, fmt.Errorf("%w: unsupported version %d", errCorruptObject, v)
	}
	footerLen := int64(binary.BigEndian.Uint32(object[n-14:]))
	if footerLen < 4 || footerLen > int64(n-tailSize) || (footerLen-4)%runSize != 0 {
		return nil, fmt.Errorf("%w: footer length %d", errCorruptObject, footerLen)
	}
	// Version 1 checksums the body too; version 2 the footer only.
	sum := object[:n-10]
	if v == objectVersion {
		sum = object[int64(n-tailSize)-footerLen : n-10]
	}
	want := binary.BigEndian.Uint32(object[n-10:])
	if got := crc32.Checksum(sum, castagnoli); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, footer says %08x", errCorruptObject, got, want)
	}
	countAt := n - tailSize - 4
	count := int64(binary.BigEndian.Uint32(object[countAt:]))
	if count*runSize+4 != footerLen {
		return nil, fmt.Errorf("%w: %d runs do not fill a footer of %d bytes", errCorruptObject, count, footerLen)
	}
	bodyLen := int64(n-tailSize) - footerLen
	runs := make([]Run, count)
	next := int64(0)
	for i := range runs {
		r := readRun(object[bodyLen+int64(i)*runSize:])
		// Length <= bodyLen-Offset rather than Offset+Length <= bodyLen:
		// the latter overflows for crafted values.
		if r.Offset < next || r.Offset > bodyLen || r.Length < 0 || r.Length > bodyLen-r.Offset {
			return nil, fmt.Errorf("%w: run %d [%d, +%d) outside body of %d bytes or out of order",
				errCorruptObject, i, r.Offset, r.Length, bodyLen)
		}
		if r.Batches <= 0 {
			return nil, fmt.Errorf("%w: run %d has %d batches", errCorruptObject, i, r.Batches)
		}
		if i > 0 && compareRuns(&runs[i-1], &r) >= 0 {
			return nil, fmt.Errorf("%w: run %d (partition %d) not after run %d (partition %d)",
				errCorruptObject, i, r.Partition, i-1, runs[i-1].Partition)
		}
		next = r.Offset + r.Length
		runs[i] = r
	}
	return runs, nil
}
