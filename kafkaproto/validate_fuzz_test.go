package kafkaproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzValidateRecords validates arbitrary batches, each also with its
// header fixed up (magic, base offset, length, lastOffsetDelta, control
// flag, CRC) so that mutations get past ValidateProduced to the record
// walk. ValidateRecords may not panic; what it accepts, DecodeRecords must
// decode into NumRecords records with offset deltas 0, 1, … (and keys, if
// required); and what DecodeRecords decodes with such deltas and keys, it
// must accept — the two walk records with the same reader.
func FuzzValidateRecords(f *testing.F) {
	for _, s := range seedBatches(f) {
		f.Add(s, false)
		f.Add(s, true)
	}
	for _, codec := range testCodecs {
		f.Add(buildBatch(f, codec, 0, []kmsg.Record{{Key: []byte("k"), Value: bytes.Repeat([]byte("v"), 3*streamWindow)}}), true)
	}
	f.Fuzz(func(t *testing.T, batch []byte, keyRequired bool) {
		check := func(b []byte) {
			rules := RecordRules{KeyRequired: keyRequired}
			err := ValidateRecords(b, rules)
			if _, perr := ValidateProduced(b); perr != nil {
				return // not a batch the agent would walk; it only must not panic
			}
			h, recs, derr := DecodeRecords(b)
			if err != nil {
				var re *RecordError
				if !errors.As(err, &re) || (re.Err != kerr.InvalidRecord && re.Err != kerr.CorruptMessage && re.Err != kerr.MessageTooLarge) {
					t.Fatalf("error %v is not a RecordError with a produce validation code", err)
				}
				if derr == nil && wellFormed(recs, rules) {
					t.Fatalf("rejected (%v) what DecodeRecords decodes", err)
				}
				return
			}
			if derr != nil {
				t.Fatalf("accepted what DecodeRecords rejects: %v", derr)
			}
			if len(recs) != int(h.NumRecords) || !wellFormed(recs, rules) {
				t.Fatalf("accepted %d records (header says %d) that are not dense or lack keys", len(recs), h.NumRecords)
			}
		}
		check(batch)
		if len(batch) >= BatchHeaderSize {
			fixed := bytes.Clone(batch)
			clear(fixed[:8])
			fixed[16] = 2
			fixed[22] &^= 0x20 // not a control batch
			if n := int32(binary.BigEndian.Uint32(fixed[57:])); n > 0 {
				binary.BigEndian.PutUint32(fixed[23:], uint32(n-1))
			}
			check(fixBatch(fixed))
		}
	})
}

// wellFormed reports whether decoded records have the offset deltas 0, 1, …
// and, if rules require, keys.
func wellFormed(recs []Record, rules RecordRules) bool {
	for i, r := range recs {
		if r.OffsetDelta != int32(i) || (rules.KeyRequired && r.Key == nil) {
			return false
		}
	}
	return true
}
