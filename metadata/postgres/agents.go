package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"floe/metadata"
)

// registerAttempts bounds the retries of RegisterAgent when agents starting
// together pick the same free node id (the loser gets a unique violation).
const registerAttempts = 20

// RegisterAgent implements metadata.Store in one upsert. A new ID gets the
// smallest node id not held by any agent row; a known ID keeps its node id.
func (s *Store) RegisterAgent(ctx context.Context, a metadata.Agent) (metadata.Agent, error) {
	var err error
	for range registerAttempts {
		err = s.pool.QueryRow(ctx, `INSERT INTO agents (id, node_id, host, port, zone, last_heartbeat)
			VALUES ($1,
				(SELECT min(c.n) FROM (SELECT 1 AS n UNION ALL SELECT node_id + 1 FROM agents) c
				  WHERE NOT EXISTS (SELECT 1 FROM agents x WHERE x.node_id = c.n)),
				$2, $3, $4, now())
			ON CONFLICT (id) DO UPDATE
			   SET host = EXCLUDED.host, port = EXCLUDED.port, zone = EXCLUDED.zone, last_heartbeat = now()
			RETURNING node_id, last_heartbeat`, a.ID, a.Host, a.Port, a.Zone).Scan(&a.NodeID, &a.LastHeartbeat)
		if !isUniqueViolation(err, "agents_node_id_key") {
			break
		}
	}
	if err != nil {
		return metadata.Agent{}, fmt.Errorf("register agent %s: %w", a.ID, err)
	}
	return a, nil
}

// Heartbeat implements metadata.Store.
func (s *Store) Heartbeat(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE agents SET last_heartbeat = now() WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		err = metadata.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("heartbeat %s: %w", id, err)
	}
	return nil
}

// DeregisterAgent implements metadata.Store; removing an absent agent is not
// an error.
func (s *Store) DeregisterAgent(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM agents WHERE id = $1`, id); err != nil {
		return fmt.Errorf("deregister agent %s: %w", id, err)
	}
	return nil
}

// LiveAgents implements metadata.Store in one statement. ttl must be positive.
func (s *Store) LiveAgents(ctx context.Context, ttl time.Duration) ([]metadata.Agent, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("live agents: ttl %v must be positive", ttl)
	}
	rows, err := s.pool.Query(ctx, `WITH gone AS (
			DELETE FROM agents WHERE last_heartbeat <= now() - $1::bigint * interval '1 microsecond')
		SELECT id, node_id, host, port, zone, last_heartbeat FROM agents
		 WHERE last_heartbeat > now() - $1::bigint * interval '1 microsecond'
		 ORDER BY node_id`, ttl.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("live agents: %w", err)
	}
	as, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (metadata.Agent, error) {
		var a metadata.Agent
		err := row.Scan(&a.ID, &a.NodeID, &a.Host, &a.Port, &a.Zone, &a.LastHeartbeat)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("live agents: %w", err)
	}
	return as, nil
}
