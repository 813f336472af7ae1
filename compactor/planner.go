package compactor

import (
	"time"

	"floe/metadata"
)

// KeyCompactedLevel is the level recorded for objects written by key
// compaction. The merge planner never picks them (it only merges levels
// below MaxLevel), and key compaction treats rows in them as clean.
const KeyCompactedLevel = 1000

// PlanConfig bounds what one merge job takes.
type PlanConfig struct {
	// FanIn is how many objects of one level a merge takes (WarpStream
	// merges 32); a full group is merged at once.
	FanIn int
	// MaxWait lets a group smaller than FanIn (but of at least two
	// objects) be merged once its oldest object is this old, so a quiet
	// cluster's last objects are merged too.
	MaxWait time.Duration
	// MaxLevel is the highest level a merge writes; objects at MaxLevel
	// (and key-compacted objects) are never merged again.
	MaxLevel int
	// MaxBytes caps the total size of one merge's sources (and so of the
	// merged object). An object alone at least this large is left alone.
	MaxBytes int64
}

// MergeJob is one planned merge: objects of one level, oldest first,
// rewritten into one object of level Level+1.
type MergeJob struct {
	Level int
	Keys  []string
	Bytes int64
}

// PlanMerges groups live objects into merge jobs. objs must be sorted
// oldest first (as Store.Objects returns them). Within each level the
// objects are taken in age order, so consecutive flushes — whose
// partitions' offsets are usually contiguous — land in one merged object,
// which then needs one index row per partition instead of one per flush.
// Jobs come out by level, then age; their key sets are disjoint.
func PlanMerges(objs []metadata.ObjectInfo, cfg PlanConfig, now time.Time) []MergeJob {
	if cfg.FanIn < 2 {
		return nil
	}
	byLevel := map[int][]metadata.ObjectInfo{}
	maxSeen := -1
	for _, o := range objs {
		if o.State != metadata.ObjectLive || o.Level < 0 || o.Level >= cfg.MaxLevel {
			continue
		}
		byLevel[o.Level] = append(byLevel[o.Level], o)
		maxSeen = max(maxSeen, o.Level)
	}
	var jobs []MergeJob
	for level := 0; level <= maxSeen; level++ {
		var cur MergeJob
		var oldest time.Time
		flush := func(force bool) {
			ready := len(cur.Keys) >= cfg.FanIn || force ||
				(len(cur.Keys) >= 2 && !oldest.IsZero() && now.Sub(oldest) >= cfg.MaxWait)
			if ready && len(cur.Keys) >= 2 {
				jobs = append(jobs, cur)
			}
			cur = MergeJob{Level: level}
			oldest = time.Time{}
		}
		cur.Level = level
		for _, o := range byLevel[level] {
			if cfg.MaxBytes > 0 && o.Size >= cfg.MaxBytes {
				// Too big to merge: it splits the level's run of objects,
				// so what is before it is merged (or not) on its own.
				flush(false)
				continue
			}
			if cfg.MaxBytes > 0 && cur.Bytes+o.Size > cfg.MaxBytes {
				flush(true)
			}
			if len(cur.Keys) == 0 {
				oldest = o.CreatedAt
			}
			cur.Keys = append(cur.Keys, o.Key)
			cur.Bytes += o.Size
			if len(cur.Keys) == cfg.FanIn {
				flush(false)
			}
		}
		flush(false)
	}
	return jobs
}
