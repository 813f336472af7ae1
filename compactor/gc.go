package compactor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"floe/metadata"
	"floe/storage"
)

// objectPrefix is where agents and the compactor write objects (see
// storage.NewObjectKey); the orphan scan lists only it, so other data in
// the bucket (Iceberg tables) is never touched.
const objectPrefix = "objects/"

// gc deletes objects nothing needs any more, in three steps:
//
//  1. live objects without index rows (their rows went to retention, a
//     topic deletion, or a swap) become replaced, deletable after Grace;
//  2. replaced objects past their DeleteAfter are deleted from the bucket,
//     then forgotten by the store (in that order: a crash in between only
//     repeats an idempotent delete);
//  3. objects in the bucket the store does not know, last modified more
//     than Grace ago, are orphans — PUT by an agent or compactor that died
//     before its commit — and are deleted. This step lists every object in
//     the bucket and asks the store about each, so it runs once per grace
//     period rather than every round: an orphan cannot be deleted before
//     it is Grace old anyway, and goes by twice that.
//
// The grace period lets fetches that read an index row just before it
// went away still GET its object.
func (c *Compactor) gc(ctx context.Context, l *metadata.JobLease) error {
	if _, err := c.store.MarkUnreferenced(ctx, 0, c.cfg.Grace); err != nil {
		return err
	}
	for {
		objs, err := c.store.DeletableObjects(ctx, c.cfg.DeleteBatch)
		if err != nil {
			return err
		}
		if len(objs) == 0 {
			break
		}
		if err := l.Renew(ctx); err != nil {
			return err
		}
		keys := make([]string, 0, len(objs))
		for _, o := range objs {
			if err := c.bucket.Delete(ctx, o.Key); err != nil {
				return fmt.Errorf("delete %s: %w", o.Key, err)
			}
			keys = append(keys, o.Key)
			c.metrics.deleted.WithLabelValues("replaced").Inc()
			c.metrics.reclaimedBytes.Add(float64(o.Size))
		}
		if err := c.store.ForgetObjects(ctx, keys); err != nil {
			return err
		}
		if len(objs) < c.cfg.DeleteBatch {
			break
		}
	}
	// Rounds run under the job's lease one compactor at a time, so
	// lastOrphanScan needs no lock; with several compactors taking turns,
	// each scans at most once per grace period.
	if now := time.Now(); c.lastOrphanScan.IsZero() || now.Sub(c.lastOrphanScan) >= c.cfg.Grace {
		if err := c.deleteOrphans(ctx, l); err != nil {
			return err
		}
		c.lastOrphanScan = now
		c.metrics.orphanScans.Inc()
	}
	return nil
}

// deleteOrphans lists the bucket and deletes unknown objects older than the
// grace period, asking the store about keys in batches.
func (c *Compactor) deleteOrphans(ctx context.Context, l *metadata.JobLease) error {
	cutoff := time.Now().Add(-c.cfg.Grace)
	var batch []storage.ObjectInfo
	check := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := l.Renew(ctx); err != nil {
			return err
		}
		keys := make([]string, len(batch))
		for i, o := range batch {
			keys[i] = o.Key
		}
		known, err := c.store.KnownObjects(ctx, keys)
		if err != nil {
			return err
		}
		for _, o := range batch {
			if known[o.Key] {
				continue
			}
			if err := c.bucket.Delete(ctx, o.Key); err != nil {
				return fmt.Errorf("delete orphan %s: %w", o.Key, err)
			}
			c.metrics.deleted.WithLabelValues("orphan").Inc()
			c.metrics.reclaimedBytes.Add(float64(o.Size))
			c.log.Info("deleted orphan object", "key", o.Key, "size", o.Size, "modified", o.LastModified)
		}
		batch = batch[:0]
		return nil
	}
	err := c.bucket.List(ctx, objectPrefix, func(o storage.ObjectInfo) error {
		if !strings.HasPrefix(o.Key, objectPrefix) || !o.LastModified.Before(cutoff) {
			return nil
		}
		batch = append(batch, o)
		if len(batch) >= 500 {
			return check()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list bucket: %w", err)
	}
	return check()
}
