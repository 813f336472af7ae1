package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

// InitProducerID implements metadata.ProducerStore.
func (s *Store) InitProducerID(ctx context.Context, producerID int64, epoch int16) (int64, int16, error) {
	var id int64
	var ep int16
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if producerID >= 0 {
			var cur int16
			err := tx.QueryRowContext(ctx, `SELECT epoch FROM producer_ids WHERE producer_id = ?`, producerID).Scan(&cur)
			if errors.Is(err, sql.ErrNoRows) || (err == nil && cur != epoch) {
				return metadata.ErrInvalidProducerEpoch
			}
			if err != nil {
				return err
			}
			if cur < math.MaxInt16-1 {
				id, ep = producerID, cur+1
				_, err = tx.ExecContext(ctx, `UPDATE producer_ids SET epoch = ? WHERE producer_id = ?`, ep, id)
				return err
			}
			// Epoch exhausted: a fresh id, as Kafka does.
		}
		ep = 0
		return tx.QueryRowContext(ctx, `INSERT INTO producer_ids (epoch, created_at) VALUES (0, ?) RETURNING producer_id`,
			s.now().UnixMilli()).Scan(&id)
	})
	if err != nil {
		return -1, -1, fmt.Errorf("init producer id: %w", err)
	}
	return id, ep, nil
}

// loadProducerStates reads the states of the producers in r's batch list.
func loadProducerStates(t *wtx, r metadata.RunCommit) (map[int64]*metadata.ProducerState, error) {
	states := make(map[int64]*metadata.ProducerState)
	for _, b := range r.BatchList {
		if b.ProducerID < 0 {
			continue
		}
		if _, ok := states[b.ProducerID]; ok {
			continue
		}
		var epoch int16
		var raw string
		err := t.stmt(stProducerState).QueryRowContext(t.ctx, r.TopicID[:], r.Partition, b.ProducerID).Scan(&epoch, &raw)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		st, err := sqlutil.DecodeProducerState(epoch, raw)
		if err != nil {
			return nil, err
		}
		states[b.ProducerID] = st
	}
	return states, nil
}

// saveProducerStates writes back the states PlanRun updated.
func saveProducerStates(t *wtx, r metadata.RunCommit, states map[int64]*metadata.ProducerState, now int64) error {
	for pid, st := range states {
		raw, err := sqlutil.EncodeProducerState(st)
		if err != nil {
			return err
		}
		if err := t.exec(stSaveProducerState, r.TopicID[:], r.Partition, pid, st.Epoch, raw, now); err != nil {
			return err
		}
	}
	return nil
}
