package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"floe/metadata/internal/sqlstore"
)

// stmtID names one of the statements of the commit path, which the Store
// prepares once on its writer connection: modernc.org/sqlite compiles an
// unprepared statement anew on every call, and at one commit per flush
// (5 ms by default) that compilation was a tenth of the agent's CPU.
type stmtID int

const (
	stPartitionRange stmtID = iota
	stInsertObject
	stInsertIndex
	stUpdatePartition
	stCountCommit
	stProducerState
	stSaveProducerState
	stTxnPartition
	stDeleteTxnPartition
	stUpdateTxnPartition
	stInsertTxnAborted
	stUpsertGroupOffset
	stUpsertTxnOffset
	numStmts
)

var stmtSQL = [numStmts]string{
	// One range read per topic of a commit instead of one read per
	// partition; CommitObject ignores the partitions it does not commit to.
	stPartitionRange: `SELECT part, next_offset, max_timestamp FROM partitions
		WHERE topic_id = ? AND part BETWEEN ? AND ?`,
	stInsertObject: `INSERT INTO objects (key, size, agent_id, created_at) VALUES (?, ?, ?, ?)`,
	stInsertIndex: `INSERT INTO object_index
		(topic_id, part, base_offset, end_offset, object_key, byte_offset, byte_length, batches, min_ts, max_ts)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	stUpdatePartition: `UPDATE partitions SET next_offset = ?, max_timestamp = ? WHERE topic_id = ? AND part = ?`,
	stCountCommit:     `UPDATE counters SET value = value + 1 WHERE name = 'commits'`,
	stProducerState:   `SELECT epoch, batches FROM producer_state WHERE topic_id = ? AND part = ? AND producer_id = ?`,
	stSaveProducerState: `INSERT INTO producer_state (topic_id, part, producer_id, epoch, batches, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (topic_id, part, producer_id) DO UPDATE SET epoch = excluded.epoch, batches = excluded.batches, updated_at = excluded.updated_at`,
	stTxnPartition:       `SELECT epoch, first_offset FROM txn_partitions WHERE topic_id = ? AND part = ? AND producer_id = ?`,
	stDeleteTxnPartition: `DELETE FROM txn_partitions WHERE topic_id = ? AND part = ? AND producer_id = ?`,
	stUpdateTxnPartition: `UPDATE txn_partitions SET first_offset = ? WHERE topic_id = ? AND part = ? AND producer_id = ?`,
	stInsertTxnAborted: `INSERT INTO txn_aborted (topic_id, part, first_offset, producer_id, last_offset)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
	// One row per committed partition: a 100,000-partition OffsetCommit
	// would otherwise compile its statement 100,000 times.
	stUpsertGroupOffset: `INSERT INTO group_offsets
		(group_id, topic, part, committed, leader_epoch, metadata, commit_time) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (group_id, topic, part) DO UPDATE SET committed = excluded.committed,
		leader_epoch = excluded.leader_epoch, metadata = excluded.metadata, commit_time = excluded.commit_time`,
	stUpsertTxnOffset: `INSERT INTO txn_offsets
		(txn_id, group_id, topic, part, committed, leader_epoch, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (txn_id, group_id, topic, part) DO UPDATE SET committed = excluded.committed,
		leader_epoch = excluded.leader_epoch, metadata = excluded.metadata`,
}

// readStmtID names one of the fetch path's statements, prepared once on
// the reader pool: every long-polling consumer reads its partitions'
// offsets and index rows after every flush, and compiling those queries
// each time was a fifth of floe dev's CPU at 10k records/s.
type readStmtID int

const (
	rsPartitionState readStmtID = iota
	rsLookup
	numReadStmts
)

var readStmtSQL = [numReadStmts]string{
	rsPartitionState: `SELECT log_start_offset, next_offset, max_timestamp
		FROM partitions WHERE topic_id = ? AND part = ?`,
	// The inner max() finds the entry containing offset through the
	// primary key; the outer scan then walks forward from it.
	rsLookup: `SELECT ` + sqlstore.IndexColumns + ` FROM object_index i
		WHERE topic_id = ?1 AND part = ?2 AND end_offset > ?3
		  AND base_offset >= coalesce((SELECT max(base_offset) FROM object_index
		                               WHERE topic_id = ?1 AND part = ?2 AND base_offset <= ?3), ?3)
		ORDER BY base_offset LIMIT ?4`,
}

// prepare prepares the commit statements on the writer pool. The pool has
// one connection that never expires, so each statement is compiled once;
// should database/sql ever replace that connection, Tx.StmtContext
// re-prepares on the new one.
func (s *Store) prepare(ctx context.Context) error {
	for id, q := range stmtSQL {
		st, err := s.w.PrepareContext(ctx, q)
		if err != nil {
			s.closeStmts()
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		s.stmts[id] = st
	}
	// On the reader pool, database/sql prepares each statement once per
	// connection as it is first used there, and Tx.StmtContext reuses it.
	for id, q := range readStmtSQL {
		st, err := s.r.PrepareContext(ctx, q)
		if err != nil {
			s.closeStmts()
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		s.rstmts[id] = st
	}
	return nil
}

// closeStmts closes the prepared statements (before the writer pool).
func (s *Store) closeStmts() error {
	var errs []error
	for i, st := range s.stmts {
		if st != nil {
			errs = append(errs, st.Close())
			s.stmts[i] = nil
		}
	}
	for i, st := range s.rstmts {
		if st != nil {
			errs = append(errs, st.Close())
			s.rstmts[i] = nil
		}
	}
	s.readStmts.Range(func(k, st any) bool {
		errs = append(errs, st.(*sql.Stmt).Close())
		s.readStmts.Delete(k)
		return true
	})
	return errors.Join(errs...)
}

// wtx is a write transaction that binds the Store's prepared statements to
// itself on first use, so a statement run once per partition is bound once
// per transaction. Like sql.Tx, it is used by one goroutine.
type wtx struct {
	*sql.Tx
	ctx   context.Context
	s     *Store
	bound [numStmts]*sql.Stmt
}

// stmt returns statement id bound to the transaction. Its errors surface
// from the statement's first use (sql.Stmt keeps them).
func (t *wtx) stmt(id stmtID) *sql.Stmt {
	if t.bound[id] == nil {
		t.bound[id] = t.StmtContext(t.ctx, t.s.stmts[id])
	}
	return t.bound[id]
}

// exec runs statement id with args.
func (t *wtx) exec(id stmtID, args ...any) error {
	_, err := t.stmt(id).ExecContext(t.ctx, args...)
	return err
}

// writeStmtTx is writeTx with the prepared statements at hand.
func (s *Store) writeStmtTx(ctx context.Context, fn func(t *wtx) error) error {
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		return fn(&wtx{Tx: tx, ctx: ctx, s: s})
	})
}
