package kafkaproto

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Versions is one API's registration: the versions we advertise and the
// versions we actually handle. They differ for Produce, which is advertised
// from v0 (librdkafka only compresses when Produce v0 is advertised) but
// handled from v3, the first version carrying v2 record batches.
type Versions struct {
	Key                int16
	AdvertisedMin, Max int16
	HandledMin         int16 // >= AdvertisedMin
}

// Table is built from per-API registrations; ApiVersions responses come from
// it so what is advertised cannot drift from what is handled.
//
// The zero Table is empty and ready to use. Register everything before the
// Table is shared: Register must not run concurrently with anything else,
// while the read methods are safe for concurrent use once registration is
// done.
type Table struct {
	byKey map[int16]Versions
	// sorted holds the registrations ordered by key; it is rebuilt on
	// Register so reads never sort.
	sorted []Versions
}

// Register adds one API's versions. It panics on a duplicate key or an
// inconsistent range (AdvertisedMin <= HandledMin <= Max, all >= 0): both
// are programming errors found at startup, not runtime conditions.
func (t *Table) Register(v Versions) {
	if v.AdvertisedMin < 0 || v.HandledMin < v.AdvertisedMin || v.Max < v.HandledMin {
		panic(fmt.Sprintf("kafkaproto: api key %d: bad version range %+v", v.Key, v))
	}
	if _, dup := t.byKey[v.Key]; dup {
		panic(fmt.Sprintf("kafkaproto: api key %d registered twice", v.Key))
	}
	if t.byKey == nil {
		t.byKey = make(map[int16]Versions)
	}
	t.byKey[v.Key] = v
	i, _ := slices.BinarySearchFunc(t.sorted, v.Key, func(e Versions, k int16) int { return int(e.Key) - int(k) })
	t.sorted = slices.Insert(t.sorted, i, v)
}

// Lookup returns the registration for key.
func (t *Table) Lookup(key int16) (Versions, bool) {
	v, ok := t.byKey[key]
	return v, ok
}

// All returns every registration, sorted by key. The slice is the caller's.
func (t *Table) All() []Versions {
	return slices.Clone(t.sorted)
}

// Supported reports whether key at version is handled (HandledMin..Max).
// Versions advertised but not handled (Produce v0..v2) are not supported:
// callers answer them with UNSUPPORTED_VERSION.
func (t *Table) Supported(key, version int16) bool {
	v, ok := t.byKey[key]
	return ok && version >= v.HandledMin && version <= v.Max
}

// ApiVersionsKeys returns the ApiKeys array of an ApiVersions response: every
// registration's advertised range, sorted by key.
func (t *Table) ApiVersionsKeys() []kmsg.ApiVersionsResponseApiKey {
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(t.sorted))
	for _, v := range t.sorted {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = v.Key, v.AdvertisedMin, v.Max
		keys = append(keys, k)
	}
	return keys
}
