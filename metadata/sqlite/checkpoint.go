package sqlite

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"
)

// Checkpoints copy the WAL back into the database file. SQLite runs one
// inside the commit that pushes the WAL past wal_autocheckpoint pages
// (1000 by default), so every ~30th flush commit also wrote up to 4 MB to the
// database file and synced it, which set the commit tail. The Store instead
// checkpoints from its own connection in the background, where a PASSIVE
// checkpoint runs beside the writer, and leaves the writer's
// auto-checkpoint only as a backstop for a WAL that grows anyway.
const (
	// checkpointInterval is how often the background checkpointer looks
	// for writes to copy back.
	checkpointInterval = 200 * time.Millisecond
	// backstopCheckpointPages is the writer's wal_autocheckpoint: only
	// when the background checkpoints fall this far behind (40 MB of 4 KB
	// pages) does a commit checkpoint itself.
	backstopCheckpointPages = 10000
)

// checkpointer owns the background checkpoint goroutine. writes counts
// write transactions; the goroutine compares it with the count at its last
// checkpoint, so an idle store runs no checkpoints.
type checkpointer struct {
	db     *sql.DB
	writes atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
}

// startCheckpointer starts checkpointing through db, a one-connection pool
// the checkpointer then owns and closes.
func startCheckpointer(db *sql.DB) *checkpointer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{db: db, cancel: cancel, done: make(chan struct{})}
	go c.run(ctx)
	return c
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(checkpointInterval)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := c.writes.Load()
		if n == last {
			continue
		}
		// PASSIVE never waits for or blocks the writer or readers; pages
		// it cannot copy now are copied by a later round. An error (say,
		// SQLITE_BUSY against another process's checkpoint) is retried
		// the same way, and the writer's backstop bounds the WAL.
		if _, err := c.db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err == nil {
			last = n
		}
	}
}

// close stops the goroutine, waits for it and closes its connection.
func (c *checkpointer) close() error {
	c.cancel()
	<-c.done
	return c.db.Close()
}
