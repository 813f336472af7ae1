package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"floe/metadata"
)

// ACLs are few (hundreds, not millions) and filters have Kafka's matching
// rules (wildcards, prefixes), so filters are applied in Go to every row,
// by metadata.ACLFilter.Matches, the one implementation of those rules.

const aclColumns = `resource_type, resource_name, pattern_type, principal, host, operation, permission`

func scanACL(r Row) (metadata.ACL, error) {
	var a metadata.ACL
	var rt, pt, op, perm int64
	if err := r.Scan(&rt, &a.ResourceName, &pt, &a.Principal, &a.Host, &op, &perm); err != nil {
		return a, err
	}
	a.ResourceType, a.PatternType, a.Operation, a.Permission = int8(rt), int8(pt), int8(op), int8(perm)
	return a, nil
}

func compareACLs(x, y metadata.ACL) int {
	return cmp.Or(
		cmp.Compare(x.ResourceType, y.ResourceType),
		cmp.Compare(x.ResourceName, y.ResourceName),
		cmp.Compare(x.PatternType, y.PatternType),
		cmp.Compare(x.Principal, y.Principal),
		cmp.Compare(x.Host, y.Host),
		cmp.Compare(x.Operation, y.Operation),
		cmp.Compare(x.Permission, y.Permission),
	)
}

// allACLs reads every ACL, sorted.
func allACLs(ctx context.Context, q Querier) ([]metadata.ACL, error) {
	rows, err := q.Query(ctx, `SELECT `+aclColumns+` FROM acls`)
	acls, err := collect(rows, err, scanACL)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(acls, compareACLs)
	return acls, nil
}

func bumpACLVersion(ctx context.Context, q Querier) error {
	_, err := q.Exec(ctx, `UPDATE acl_version SET version = version + 1 WHERE id = 1`)
	return err
}

// CreateACLs implements metadata.ACLStore.
func (s *Store) CreateACLs(ctx context.Context, acls []metadata.ACL) error {
	if len(acls) == 0 {
		return nil
	}
	err := s.db.WriteTx(ctx, func(q Querier) error {
		for _, a := range acls {
			if _, err := q.Exec(ctx, `INSERT INTO acls (`+aclColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
				ON CONFLICT DO NOTHING`,
				a.ResourceType, a.ResourceName, a.PatternType, a.Principal, a.Host, a.Operation, a.Permission); err != nil {
				return err
			}
		}
		return bumpACLVersion(ctx, q)
	})
	if err != nil {
		return fmt.Errorf("create acls: %w", err)
	}
	return nil
}

// ListACLs implements metadata.ACLStore.
func (s *Store) ListACLs(ctx context.Context, f metadata.ACLFilter) ([]metadata.ACL, error) {
	acls, err := allACLs(ctx, s.db.Read())
	if err != nil {
		return nil, fmt.Errorf("list acls: %w", err)
	}
	return slices.DeleteFunc(acls, func(a metadata.ACL) bool { return !f.Matches(a) }), nil
}

// DeleteACLs implements metadata.ACLStore. The rows are read and deleted
// in one write transaction, under row locks on PostgreSQL, so what it
// returns is what it deleted.
func (s *Store) DeleteACLs(ctx context.Context, filters []metadata.ACLFilter) ([][]metadata.ACL, error) {
	var out [][]metadata.ACL
	err := s.db.WriteTx(ctx, func(q Querier) error {
		out = make([][]metadata.ACL, len(filters))
		// The version row is locked first: concurrent changes of ACLs
		// apply one after the other.
		if err := bumpACLVersion(ctx, q); err != nil {
			return err
		}
		rows, err := q.Query(ctx, `SELECT `+aclColumns+` FROM acls`+s.d.ForUpdate())
		acls, err := collect(rows, err, scanACL)
		if err != nil {
			return err
		}
		slices.SortFunc(acls, compareACLs)
		for _, a := range acls {
			matched := false
			for i, f := range filters {
				if f.Matches(a) {
					out[i] = append(out[i], a)
					matched = true
				}
			}
			if !matched {
				continue
			}
			if _, err := q.Exec(ctx, `DELETE FROM acls WHERE resource_type = $1 AND resource_name = $2 AND pattern_type = $3
				AND principal = $4 AND host = $5 AND operation = $6 AND permission = $7`,
				a.ResourceType, a.ResourceName, a.PatternType, a.Principal, a.Host, a.Operation, a.Permission); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("delete acls: %w", err)
	}
	return out, nil
}

// ACLVersion implements metadata.ACLStore.
func (s *Store) ACLVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.db.Read().QueryRow(ctx, `SELECT version FROM acl_version WHERE id = 1`).Scan(&v); err != nil {
		return 0, fmt.Errorf("acl version: %w", err)
	}
	return v, nil
}
