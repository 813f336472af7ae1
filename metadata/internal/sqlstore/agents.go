package sqlstore

import (
	"context"
	"fmt"
	"time"

	"floe/metadata"
	"floe/metadata/internal/sqlutil"
)

// registerAttempts bounds the retries of RegisterAgent when agents starting
// together pick the same free node id (the loser gets a unique violation;
// only PostgreSQL, with concurrent writers, ever sees one).
const registerAttempts = 20

// RegisterAgent implements metadata.Store in one upsert. A new ID gets the
// smallest node id not held by any agent row; a known ID keeps its node id.
func (s *Store) RegisterAgent(ctx context.Context, a metadata.Agent) (metadata.Agent, error) {
	listeners, err := sqlutil.EncodeConfigs(a.Listeners)
	if err != nil {
		return metadata.Agent{}, fmt.Errorf("register agent %s: %w", a.ID, err)
	}
	for range registerAttempts {
		err = s.db.Write().QueryRow(ctx, `INSERT INTO agents (id, node_id, host, port, zone, http_addr, listeners, last_heartbeat)
			VALUES ($1,
				(SELECT min(c.n) FROM (SELECT 1 AS n UNION ALL SELECT node_id + 1 FROM agents) c
				  WHERE NOT EXISTS (SELECT 1 FROM agents x WHERE x.node_id = c.n)),
				$2, $3, $4, $5, `+s.d.JSON("$6")+`, `+s.d.Now()+`)
			ON CONFLICT (id) DO UPDATE
			   SET host = excluded.host, port = excluded.port, zone = excluded.zone, http_addr = excluded.http_addr,
			       listeners = excluded.listeners, last_heartbeat = excluded.last_heartbeat
			RETURNING node_id, last_heartbeat`, a.ID, a.Host, a.Port, a.Zone, a.HTTPAddr, listeners).Scan(&a.NodeID, Time(&a.LastHeartbeat))
		if !s.d.IsUniqueViolation(err) {
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
	n, err := s.db.Write().Exec(ctx, `UPDATE agents SET last_heartbeat = `+s.d.Now()+` WHERE id = $1`, id)
	if err := affected(n, err, metadata.ErrNotFound); err != nil {
		return fmt.Errorf("heartbeat %s: %w", id, err)
	}
	return nil
}

// DeregisterAgent implements metadata.Store; removing an absent agent is not
// an error.
func (s *Store) DeregisterAgent(ctx context.Context, id string) error {
	if _, err := s.db.Write().Exec(ctx, `DELETE FROM agents WHERE id = $1`, id); err != nil {
		return fmt.Errorf("deregister agent %s: %w", id, err)
	}
	return nil
}

// LiveAgents implements metadata.Store. ttl must be positive. The expired
// rows are deleted first; the read then filters by the same cutoff, so an
// agent that expires between the two statements is not returned either.
func (s *Store) LiveAgents(ctx context.Context, ttl time.Duration) ([]metadata.Agent, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("live agents: ttl %v must be positive", ttl)
	}
	cutoff := s.d.Now() + ` - ` + s.d.Micros("$1")
	if _, err := s.db.Write().Exec(ctx, `DELETE FROM agents WHERE last_heartbeat <= `+cutoff, ttl.Microseconds()); err != nil {
		return nil, fmt.Errorf("live agents: %w", err)
	}
	rows, err := s.db.Read().Query(ctx, `SELECT id, node_id, host, port, zone, http_addr, `+s.d.JSONText("listeners")+`, last_heartbeat
		FROM agents WHERE last_heartbeat > `+cutoff+` ORDER BY node_id`, ttl.Microseconds())
	as, err := collect(rows, err, func(r Row) (metadata.Agent, error) {
		var a metadata.Agent
		var listeners string
		if err := r.Scan(&a.ID, &a.NodeID, &a.Host, &a.Port, &a.Zone, &a.HTTPAddr, &listeners, Time(&a.LastHeartbeat)); err != nil {
			return a, err
		}
		ls, err := sqlutil.DecodeConfigs(listeners)
		if len(ls) > 0 {
			a.Listeners = ls
		}
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("live agents: %w", err)
	}
	return as, nil
}
