package avro

import (
	"errors"
	"fmt"
	"math"

	havro "github.com/hamba/avro/v2"
)

// Validate's walk over Avro's binary encoding: it reads a value of the
// schema without building it (no allocation, a few ns a field), checks
// what a decoder checks (union branches and enum symbols in range,
// booleans 0 or 1, ints within 32 bits, lengths within the payload), and
// bounds what a decoder does not: how deep a recursive schema nests and
// how many zero-size items a block claims. A 1 MB record of a recursive
// type decoded with hamba's generic decoder took 13 s; here it is
// refused at maxNesting.

const (
	// maxNesting bounds records, arrays, maps and unions nested in one
	// value.
	maxNesting = 1000
	// maxZeroSizeItems bounds the items of blocks whose items take no
	// bytes (null, an empty record): a block count is free to write.
	maxZeroSizeItems = 1 << 20
)

var (
	errTruncated = errors.New("avro payload ends early")
	errNesting   = fmt.Errorf("avro value nested deeper than %d", maxNesting)
)

type walker struct {
	b         []byte
	off       int
	zeroItems int
}

func (w *walker) varint() (int64, error) {
	var u uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if w.off >= len(w.b) {
			return 0, errTruncated
		}
		c := w.b[w.off]
		w.off++
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	return 0, errors.New("avro varint longer than 10 bytes")
}

func (w *walker) skip(n int64) error {
	if n < 0 {
		return fmt.Errorf("avro negative length %d", n)
	}
	if n > int64(len(w.b)-w.off) {
		return errTruncated
	}
	w.off += int(n)
	return nil
}

func (w *walker) value(s havro.Schema, depth int) error {
	if depth > maxNesting {
		return errNesting
	}
	switch s := s.(type) {
	case *havro.RefSchema:
		return w.value(s.Schema(), depth)
	case *havro.NullSchema:
		return nil
	case *havro.PrimitiveSchema:
		return w.primitive(s.Type())
	case *havro.FixedSchema:
		return w.skip(int64(s.Size()))
	case *havro.EnumSchema:
		i, err := w.varint()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(s.Symbols())) {
			return fmt.Errorf("avro enum %s has no symbol %d", s.FullName(), i)
		}
		return nil
	case *havro.UnionSchema:
		i, err := w.varint()
		if err != nil {
			return err
		}
		types := s.Types()
		if i < 0 || i >= int64(len(types)) {
			return fmt.Errorf("avro union has no branch %d", i)
		}
		return w.value(types[i], depth+1)
	case *havro.RecordSchema:
		for _, f := range s.Fields() {
			if err := w.value(f.Type(), depth+1); err != nil {
				return err
			}
		}
		return nil
	case *havro.ArraySchema:
		return w.blocks(depth, func() error { return w.value(s.Items(), depth+1) })
	case *havro.MapSchema:
		return w.blocks(depth, func() error {
			if err := w.primitive(havro.String); err != nil {
				return err
			}
			return w.value(s.Values(), depth+1)
		})
	}
	return fmt.Errorf("avro schema of type %s not walked", s.Type())
}

func (w *walker) primitive(t havro.Type) error {
	switch t {
	case havro.Boolean:
		if w.off >= len(w.b) {
			return errTruncated
		}
		if w.b[w.off] > 1 {
			return fmt.Errorf("avro boolean byte %d", w.b[w.off])
		}
		w.off++
		return nil
	case havro.Int:
		v, err := w.varint()
		if err == nil && (v < math.MinInt32 || v > math.MaxInt32) {
			err = fmt.Errorf("avro int %d out of range", v)
		}
		return err
	case havro.Long:
		_, err := w.varint()
		return err
	case havro.Float:
		return w.skip(4)
	case havro.Double:
		return w.skip(8)
	case havro.Bytes, havro.String:
		n, err := w.varint()
		if err != nil {
			return err
		}
		return w.skip(n)
	}
	return fmt.Errorf("avro primitive %s not walked", t)
}

// blocks walks an array's or map's blocks: a count, then (when negative)
// the block's byte size and -count items, until a count of 0.
func (w *walker) blocks(depth int, item func() error) error {
	for {
		n, err := w.varint()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if n < 0 {
			if n == math.MinInt64 {
				return errors.New("avro block count out of range")
			}
			n = -n
			if _, err := w.varint(); err != nil {
				return err
			}
		}
		for range n {
			start := w.off
			if err := item(); err != nil {
				return err
			}
			if w.off == start {
				if w.zeroItems++; w.zeroItems > maxZeroSizeItems {
					return fmt.Errorf("avro payload claims more than %d empty items", maxZeroSizeItems)
				}
			}
		}
	}
}
