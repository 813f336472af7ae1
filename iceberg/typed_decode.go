package iceberg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/google/uuid"
)

// errShort is a payload that ends inside a value.
var errShort = errors.New("payload ends inside a value")

// avroDecoder reads one Avro binary payload. A record is decoded twice:
// once with no builders, which checks the whole payload (so that a
// payload that does not decode leaves no half-appended row behind), then
// into the builders, which can then no longer fail on the payload.
type avroDecoder struct {
	buf []byte
	pos int
}

// decodeAvro checks payload against n, then appends it to the builders
// of the table's top-level columns (the record builder's fields), each
// at n's slot. A returned error means the payload does not decode with
// the writer schema; nothing was appended then.
func decodeAvro(n *avroNode, payload []byte, cols func(int) array.Builder) error {
	if err := checkAvro(n, payload); err != nil {
		return err
	}
	return appendAvro(n, payload, cols)
}

// checkAvro checks that payload decodes whole with n.
func checkAvro(n *avroNode, payload []byte) error {
	d := &avroDecoder{buf: payload}
	if err := d.record(n, nil, nil); err != nil {
		return err
	}
	if d.pos != len(d.buf) {
		return fmt.Errorf("%d bytes after the value", len(d.buf)-d.pos)
	}
	return nil
}

// appendAvro appends a payload checkAvro passed.
func appendAvro(n *avroNode, payload []byte, cols func(int) array.Builder) error {
	d := &avroDecoder{buf: payload}
	if err := d.record(n, nil, cols); err != nil {
		// The payload decoded a moment ago: only a builder of the wrong
		// type gets here, a bug, not a bad record.
		return fmt.Errorf("%w: %v", errAppend, err)
	}
	return nil
}

// errAppend is a checked value that did not fit the builders (a column
// of an unexpected type): a bug that fails the cycle, whose batch is
// then half appended; never a dead letter.
var errAppend = errors.New("appending a checked value")

func (d *avroDecoder) long() (int64, error) {
	v, n := binary.Uvarint(d.buf[d.pos:])
	if n <= 0 {
		if n == 0 {
			return 0, errShort
		}
		return 0, errors.New("varint overflows 64 bits")
	}
	d.pos += n
	return int64(v>>1) ^ -int64(v&1), nil
}

func (d *avroDecoder) int() (int32, error) {
	v, err := d.long()
	if err != nil {
		return 0, err
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("int %d out of range", v)
	}
	return int32(v), nil
}

func (d *avroDecoder) take(n int) ([]byte, error) {
	if n < 0 || n > len(d.buf)-d.pos {
		return nil, errShort
	}
	b := d.buf[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

func (d *avroDecoder) bytes() ([]byte, error) {
	n, err := d.long()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(d.buf)-d.pos) {
		return nil, errShort
	}
	return d.take(int(n))
}

// record decodes a record's fields: into the struct builder sb, or into
// the top-level column builders cols, or (both nil) only checks them.
func (d *avroDecoder) record(n *avroNode, sb *array.StructBuilder, cols func(int) array.Builder) error {
	child := func(j int) array.Builder {
		switch {
		case sb != nil:
			return sb.FieldBuilder(j)
		case cols != nil:
			return cols(j)
		}
		return nil
	}
	if sb != nil {
		sb.Append(true)
	}
	for i, fn := range n.fields {
		var b array.Builder
		if n.slots != nil && n.slots[i] >= 0 {
			b = child(n.slots[i])
		}
		if err := d.value(fn, b); err != nil {
			return fmt.Errorf("%s: %w", n.names[i], err)
		}
	}
	if sb != nil || cols != nil {
		for _, j := range n.missing {
			child(j).AppendNull()
		}
	}
	return nil
}

// value decodes one value of n into b (nil: check only).
func (d *avroDecoder) value(n *avroNode, b array.Builder) error {
	switch n.kind {
	case akNull:
		return nil
	case akBool:
		v, err := d.take(1)
		if err != nil {
			return err
		}
		if v[0] > 1 {
			return fmt.Errorf("boolean byte %d", v[0])
		}
		return appendTo(b, v[0] == 1)
	case akInt:
		v, err := d.int()
		if err != nil {
			return err
		}
		switch n.conv {
		case cvDate:
			return appendTo(b, arrow.Date32(v))
		case cvTimeMillis:
			return appendTo(b, arrow.Time64(int64(v)*1000))
		}
		return appendTo(b, v)
	case akLong:
		v, err := d.long()
		if err != nil {
			return err
		}
		switch n.conv {
		case cvMillis:
			if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
				return fmt.Errorf("milliseconds %d out of range", v)
			}
			return appendTo(b, arrow.Timestamp(v*1000))
		case cvMicros:
			if _, ok := b.(*array.Time64Builder); ok {
				return appendTo(b, arrow.Time64(v))
			}
			return appendTo(b, arrow.Timestamp(v))
		}
		return appendTo(b, v)
	case akFloat:
		v, err := d.take(4)
		if err != nil {
			return err
		}
		return appendTo(b, math.Float32frombits(binary.LittleEndian.Uint32(v)))
	case akDouble:
		v, err := d.take(8)
		if err != nil {
			return err
		}
		return appendTo(b, math.Float64frombits(binary.LittleEndian.Uint64(v)))
	case akBytes, akString, akFixed:
		var v []byte
		var err error
		if n.kind == akFixed {
			v, err = d.take(n.size)
		} else {
			v, err = d.bytes()
		}
		if err != nil {
			return err
		}
		switch n.conv {
		case cvDecimal:
			num, err := decimalOf(v)
			if err != nil {
				return err
			}
			return appendTo(b, num)
		case cvUUID:
			u, err := uuid.ParseBytes(v)
			if err != nil {
				return fmt.Errorf("uuid %q: %w", v, err)
			}
			return appendTo(b, u)
		}
		if n.kind == akString {
			return appendTo(b, string(v))
		}
		return appendTo(b, v)
	case akEnum:
		i, err := d.int()
		if err != nil {
			return err
		}
		if i < 0 || int(i) >= len(n.symbols) {
			return fmt.Errorf("enum index %d of %d symbols", i, len(n.symbols))
		}
		return appendTo(b, n.symbols[i])
	case akUnion:
		return d.union(n, b)
	case akRecord:
		sb, _ := b.(*array.StructBuilder)
		if b != nil && sb == nil {
			return fmt.Errorf("record into %T", b)
		}
		return d.record(n, sb, nil)
	case akArray:
		return d.blocks(n, b, false)
	case akMap:
		return d.blocks(n, b, true)
	}
	return fmt.Errorf("avro kind %d", n.kind)
}

func (d *avroDecoder) union(n *avroNode, b array.Builder) error {
	i, err := d.long()
	if err != nil {
		return err
	}
	if i < 0 || i >= int64(len(n.members)) {
		return fmt.Errorf("union branch %d of %d", i, len(n.members))
	}
	m := n.members[i]
	if m.kind == akNull {
		if b != nil {
			b.AppendNull()
		}
		return nil
	}
	if n.opt >= 0 || b == nil {
		return d.value(m, b)
	}
	// A union as a struct of optional fields: the branch's field set.
	sb, ok := b.(*array.StructBuilder)
	if !ok {
		return fmt.Errorf("union into %T", b)
	}
	sb.Append(true)
	for j := 0; j < sb.NumField(); j++ {
		if j != n.slots[i] {
			sb.FieldBuilder(j).AppendNull()
		}
	}
	return d.value(m, sb.FieldBuilder(n.slots[i]))
}

// blocks decodes an array's or a map's blocks into a list or map builder.
func (d *avroDecoder) blocks(n *avroNode, b array.Builder, isMap bool) error {
	var items, keys array.Builder
	switch lb := b.(type) {
	case nil:
	case *array.ListBuilder:
		lb.Append(true)
		items = lb.ValueBuilder()
	case *array.MapBuilder:
		lb.Append(true)
		keys, items = lb.KeyBuilder(), lb.ItemBuilder()
	default:
		return fmt.Errorf("array or map into %T", b)
	}
	for {
		count, err := d.long()
		if err != nil {
			return err
		}
		if count == 0 {
			return nil
		}
		if count < 0 {
			count = -count
			if _, err := d.long(); err != nil { // the block's size in bytes
				return err
			}
		}
		if err := checkCount(count, len(d.buf)-d.pos); err != nil {
			return err
		}
		for range count {
			if isMap {
				k, err := d.bytes()
				if err != nil {
					return err
				}
				if err := appendTo(keys, string(k)); err != nil {
					return err
				}
			}
			if err := d.value(n.elem, items); err != nil {
				return err
			}
		}
	}
}

// decimalOf reads a big-endian two's complement unscaled decimal.
func decimalOf(v []byte) (decimal128.Num, error) {
	if len(v) > 16 {
		return decimal128.Num{}, fmt.Errorf("decimal of %d bytes (at most 16)", len(v))
	}
	var buf [16]byte
	if len(v) > 0 && v[0]&0x80 != 0 {
		for i := range buf {
			buf[i] = 0xff
		}
	}
	copy(buf[16-len(v):], v)
	return decimal128.New(int64(binary.BigEndian.Uint64(buf[:8])), binary.BigEndian.Uint64(buf[8:])), nil
}

// appendTo appends v to b, widening as the table's schema update allows
// (int into long, float into double); b nil appends nothing.
func appendTo(b array.Builder, v any) error {
	if b == nil {
		return nil
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		if v, ok := v.(bool); ok {
			b.Append(v)
			return nil
		}
	case *array.Int32Builder:
		if v, ok := v.(int32); ok {
			b.Append(v)
			return nil
		}
	case *array.Int64Builder:
		switch v := v.(type) {
		case int64:
			b.Append(v)
			return nil
		case int32:
			b.Append(int64(v))
			return nil
		}
	case *array.Float32Builder:
		if v, ok := v.(float32); ok {
			b.Append(v)
			return nil
		}
	case *array.Float64Builder:
		switch v := v.(type) {
		case float64:
			b.Append(v)
			return nil
		case float32:
			b.Append(float64(v))
			return nil
		case int64: // json mode: an integer literal in a double column
			b.Append(float64(v))
			return nil
		}
	case *array.StringBuilder:
		if v, ok := v.(string); ok {
			b.Append(v)
			return nil
		}
	case *array.BinaryBuilder:
		if v, ok := v.([]byte); ok {
			b.Append(v)
			return nil
		}
	case *array.Date32Builder:
		if v, ok := v.(arrow.Date32); ok {
			b.Append(v)
			return nil
		}
	case *array.Time64Builder:
		if v, ok := v.(arrow.Time64); ok {
			b.Append(v)
			return nil
		}
	case *array.TimestampBuilder:
		if v, ok := v.(arrow.Timestamp); ok {
			b.Append(v)
			return nil
		}
	case *array.Decimal128Builder:
		if v, ok := v.(decimal128.Num); ok {
			b.Append(v)
			return nil
		}
	case *extensions.UUIDBuilder:
		if v, ok := v.(uuid.UUID); ok {
			b.Append(v)
			return nil
		}
	}
	return fmt.Errorf("%T into %T", v, b)
}
