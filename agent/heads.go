package agent

import (
	"sync"
	"time"

	"floe/metadata"
)

// heads remembers, per partition, the index entry of this agent's last
// commit to it whose bytes went into the read cache (write-through, see
// batcher.writeThrough). A consumer at the head of the log, woken by that
// commit, then builds its answer without an index look-up: with 16
// partitions that was 16 metadata-store queries between a commit and the
// answer that carries its records.
//
// An entry is only used while it is exactly what the store's index holds
// at the head: it starts at the fetch offset, ends at the high watermark
// the fetch read from the store after the commit, its bytes are cached,
// and it is younger than tailReadWindow. Any commit by another agent moves
// the high watermark past it, and it is no longer used.
type heads struct {
	mu sync.Mutex
	m  map[partKey]headEntry
}

type headEntry struct {
	e  metadata.IndexEntry
	at time.Time
}

func newHeads() *heads { return &heads{m: make(map[partKey]headEntry)} }

// set records e as its partition's newest local commit, unless a later one
// is recorded already (flushes in flight commit in order but may get here
// out of it).
func (h *heads) set(e metadata.IndexEntry, now time.Time) {
	k := partKey{e.TopicID, e.Partition}
	h.mu.Lock()
	if old, ok := h.m[k]; !ok || old.e.EndOffset <= e.BaseOffset {
		h.m[k] = headEntry{e, now}
	}
	h.mu.Unlock()
}

// get returns the partition's remembered entry if it spans exactly
// [offset, highWatermark) and is younger than tailReadWindow.
func (h *heads) get(topic metadata.TopicID, partition int32, offset, highWatermark int64, now time.Time) (metadata.IndexEntry, bool) {
	h.mu.Lock()
	he, ok := h.m[partKey{topic, partition}]
	h.mu.Unlock()
	if !ok || he.e.BaseOffset != offset || he.e.EndOffset != highWatermark || now.Sub(he.at) > tailReadWindow {
		return metadata.IndexEntry{}, false
	}
	return he.e, true
}

// headEntries returns the index entries from offset on without asking the
// store, when the partition's remembered head entry is all there is to
// read and its bytes are cached; nil otherwise.
func (a *Agent) headEntries(topic metadata.TopicID, partition int32, offset int64, st metadata.PartitionState) []metadata.IndexEntry {
	e, ok := a.heads.get(topic, partition, offset, st.NextOffset, time.Now())
	if !ok || !a.cache.Has(e.ObjectKey, e.ByteOffset, e.ByteLength) {
		return nil
	}
	a.metrics.headReads.Inc()
	return []metadata.IndexEntry{e}
}
