package sqlstore

import (
	"context"
	"fmt"
	"slices"

	"floe/metadata"
)

// A quota entity is stored as a kind and a name per entity type (kind
// metadata.QuotaAbsent, QuotaDefault or QuotaNamed; the name is '' unless
// named), so that every column of the primary key is NOT NULL.

const quotaColumns = `user_kind, user_name, client_kind, client_name, ip_kind, ip_name, quota_key, quota_value`

func scanQuota(r Row) (metadata.ClientQuota, error) {
	var q metadata.ClientQuota
	var uk, ck, ik int64
	e := &q.Entity
	if err := r.Scan(&uk, &e.User.Name, &ck, &e.ClientID.Name, &ik, &e.IP.Name, &q.Key, &q.Value); err != nil {
		return q, err
	}
	e.User.Kind, e.ClientID.Kind, e.IP.Kind = metadata.QuotaNameKind(uk), metadata.QuotaNameKind(ck), metadata.QuotaNameKind(ik)
	return q, nil
}

// quotaArgs are the entity's six key columns, names cleared unless named.
func quotaArgs(e metadata.QuotaEntity) []any {
	var args []any
	for _, n := range []metadata.QuotaName{e.User, e.ClientID, e.IP} {
		name := ""
		if n.Kind == metadata.QuotaNamed {
			name = n.Name
		}
		args = append(args, int64(n.Kind), name)
	}
	return args
}

// AlterClientQuotas implements metadata.QuotaStore.
func (s *Store) AlterClientQuotas(ctx context.Context, changes []metadata.QuotaChange) error {
	if len(changes) == 0 {
		return nil
	}
	err := s.db.WriteTx(ctx, func(q Querier) error {
		// The version row first: concurrent changes apply one after the
		// other.
		if _, err := q.Exec(ctx, `UPDATE quota_version SET version = version + 1 WHERE id = 1`); err != nil {
			return err
		}
		for _, c := range changes {
			args := append(quotaArgs(c.Entity), c.Key)
			if c.Remove {
				if _, err := q.Exec(ctx, `DELETE FROM client_quotas WHERE user_kind = $1 AND user_name = $2
					AND client_kind = $3 AND client_name = $4 AND ip_kind = $5 AND ip_name = $6 AND quota_key = $7`, args...); err != nil {
					return err
				}
				continue
			}
			if _, err := q.Exec(ctx, `INSERT INTO client_quotas (`+quotaColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
				ON CONFLICT (user_kind, user_name, client_kind, client_name, ip_kind, ip_name, quota_key)
				DO UPDATE SET quota_value = excluded.quota_value`, append(args, c.Value)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("alter client quotas: %w", err)
	}
	return nil
}

// ClientQuotas implements metadata.QuotaStore.
func (s *Store) ClientQuotas(ctx context.Context) ([]metadata.ClientQuota, error) {
	rows, err := s.db.Read().Query(ctx, `SELECT `+quotaColumns+` FROM client_quotas`)
	qs, err := collect(rows, err, scanQuota)
	if err != nil {
		return nil, fmt.Errorf("client quotas: %w", err)
	}
	slices.SortFunc(qs, metadata.CompareQuotas)
	return qs, nil
}

// QuotaVersion implements metadata.QuotaStore.
func (s *Store) QuotaVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.Read().QueryRow(ctx, `SELECT version FROM quota_version WHERE id = 1`).Scan(&v); err != nil {
		return 0, fmt.Errorf("quota version: %w", err)
	}
	return v, nil
}
