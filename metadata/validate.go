package metadata

import (
	"errors"
	"fmt"
)

// ErrInvalidCommit is returned by CommitObject, before anything is written,
// for an ObjectCommit that no correct agent produces (a run without records,
// a negative byte range). It means a bug in the caller, not a Kafka error.
var ErrInvalidCommit = errors.New("metadata: invalid object commit")

// Validate reports whether obj is well formed; every Store calls it at the
// start of CommitObject so both implementations reject the same inputs.
func (obj ObjectCommit) Validate() error {
	if obj.Key == "" {
		return fmt.Errorf("%w: empty object key", ErrInvalidCommit)
	}
	if obj.Size < 0 {
		return fmt.Errorf("%w: object %s: negative size %d", ErrInvalidCommit, obj.Key, obj.Size)
	}
	for i, r := range obj.Runs {
		switch {
		case r.Records < 1:
			// A run without offsets would get an empty index entry sharing its
			// base offset with the next run of the partition.
			return fmt.Errorf("%w: object %s run %d: %d records", ErrInvalidCommit, obj.Key, i, r.Records)
		case r.ByteOffset < 0 || r.ByteLength < 0:
			return fmt.Errorf("%w: object %s run %d: byte range %d+%d", ErrInvalidCommit, obj.Key, i, r.ByteOffset, r.ByteLength)
		case r.Batches < 0:
			return fmt.Errorf("%w: object %s run %d: %d batches", ErrInvalidCommit, obj.Key, i, r.Batches)
		}
		if len(r.BatchList) > 0 {
			var bytes, records int64
			for _, b := range r.BatchList {
				if b.Records < 1 || b.ByteLength < 1 {
					return fmt.Errorf("%w: object %s run %d: batch of %d records, %d bytes", ErrInvalidCommit, obj.Key, i, b.Records, b.ByteLength)
				}
				bytes += b.ByteLength
				records += b.Records
			}
			if bytes != r.ByteLength || records != r.Records || int32(len(r.BatchList)) != r.Batches {
				return fmt.Errorf("%w: object %s run %d: batch list does not add up to the run", ErrInvalidCommit, obj.Key, i)
			}
		}
	}
	return nil
}
