package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"floe/metadata"
)

// freeNodeIDQuery yields the smallest node id >= 1 that no agent row holds.
const freeNodeIDQuery = `SELECT min(c.n) FROM (SELECT 1 AS n UNION ALL SELECT node_id + 1 FROM agents) c
	WHERE NOT EXISTS (SELECT 1 FROM agents a WHERE a.node_id = c.n)`

// RegisterAgent implements metadata.Store. A new ID gets the smallest node id
// not held by any agent row; a known ID keeps its node id.
func (s *Store) RegisterAgent(ctx context.Context, a metadata.Agent) (metadata.Agent, error) {
	now := s.now().UnixMilli()
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE agents SET host = ?, port = ?, zone = ?, last_heartbeat = ?
			WHERE id = ? RETURNING node_id`, a.Host, a.Port, a.Zone, now, a.ID).Scan(&a.NodeID)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := tx.QueryRowContext(ctx, freeNodeIDQuery).Scan(&a.NodeID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO agents (id, node_id, host, port, zone, last_heartbeat)
			VALUES (?, ?, ?, ?, ?, ?)`, a.ID, a.NodeID, a.Host, a.Port, a.Zone, now)
		return err
	})
	if err != nil {
		return metadata.Agent{}, fmt.Errorf("register agent %s: %w", a.ID, err)
	}
	a.LastHeartbeat = time.UnixMilli(now)
	return a, nil
}

// Heartbeat implements metadata.Store.
func (s *Store) Heartbeat(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `UPDATE agents SET last_heartbeat = ? WHERE id = ?`, s.now().UnixMilli(), id)
	if err != nil {
		return fmt.Errorf("heartbeat %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("heartbeat %s: %w", id, err)
	} else if n == 0 {
		return fmt.Errorf("heartbeat %s: %w", id, metadata.ErrNotFound)
	}
	return nil
}

// DeregisterAgent implements metadata.Store; removing an absent agent is not
// an error.
func (s *Store) DeregisterAgent(ctx context.Context, id string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM agents WHERE id = ?`, id); err != nil {
		return fmt.Errorf("deregister agent %s: %w", id, err)
	}
	return nil
}

// LiveAgents implements metadata.Store. ttl must be positive.
func (s *Store) LiveAgents(ctx context.Context, ttl time.Duration) ([]metadata.Agent, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("live agents: ttl %v must be positive", ttl)
	}
	cutoff := s.now().Add(-ttl).UnixMilli()
	var as []metadata.Agent
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM agents WHERE last_heartbeat <= ?`, cutoff); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, node_id, host, port, zone, last_heartbeat FROM agents ORDER BY node_id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				a  metadata.Agent
				hb int64
			)
			if err := rows.Scan(&a.ID, &a.NodeID, &a.Host, &a.Port, &a.Zone, &hb); err != nil {
				return err
			}
			a.LastHeartbeat = time.UnixMilli(hb)
			as = append(as, a)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("live agents: %w", err)
	}
	return as, nil
}
