package sqlite

import (
	"database/sql"
	"errors"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

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
