package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"floe/metadata"
)

const scramColumns = `user_name, mechanism, salt, iterations, stored_key, server_key`

func scanScram(r Row) (metadata.ScramCredential, error) {
	var c metadata.ScramCredential
	err := r.Scan(&c.User, &c.Mechanism, &c.Salt, &c.Iterations, &c.StoredKey, &c.ServerKey)
	return c, err
}

// ScramCredential implements metadata.CredentialStore.
func (s *Store) ScramCredential(ctx context.Context, user, mechanism string) (metadata.ScramCredential, error) {
	c, err := scanScram(s.db.Read().QueryRow(ctx, `SELECT `+scramColumns+` FROM scram_credentials
		WHERE user_name = $1 AND mechanism = $2`, user, mechanism))
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("scram credential %s/%s: %w", user, mechanism, metadata.ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("scram credential %s/%s: %w", user, mechanism, err)
	}
	return c, nil
}

// ScramCredentials implements metadata.CredentialStore.
func (s *Store) ScramCredentials(ctx context.Context, users []string) ([]metadata.ScramCredential, error) {
	if len(users) == 0 {
		rows, err := s.db.Read().Query(ctx, `SELECT `+scramColumns+` FROM scram_credentials ORDER BY user_name, mechanism`)
		cs, err := collect(rows, err, scanScram)
		if err != nil {
			return nil, fmt.Errorf("scram credentials: %w", err)
		}
		return cs, nil
	}
	users = slices.Clone(users)
	slices.Sort(users)
	users = slices.Compact(users)
	var out []metadata.ScramCredential
	for chunk := range slices.Chunk(users, s.d.MaxIn()) {
		cond, args := s.d.In("user_name", 1, chunk)
		rows, err := s.db.Read().Query(ctx, `SELECT `+scramColumns+` FROM scram_credentials WHERE `+cond+
			` ORDER BY user_name, mechanism`, args...)
		cs, err := collect(rows, err, scanScram)
		if err != nil {
			return nil, fmt.Errorf("scram credentials: %w", err)
		}
		out = append(out, cs...)
	}
	return out, nil
}

// UpsertScramCredential implements metadata.CredentialStore.
func (s *Store) UpsertScramCredential(ctx context.Context, c metadata.ScramCredential) error {
	if _, err := s.db.Write().Exec(ctx, `INSERT INTO scram_credentials (`+scramColumns+`) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (user_name, mechanism) DO UPDATE SET salt = excluded.salt, iterations = excluded.iterations,
			stored_key = excluded.stored_key, server_key = excluded.server_key`,
		c.User, c.Mechanism, c.Salt, c.Iterations, c.StoredKey, c.ServerKey); err != nil {
		return fmt.Errorf("upsert scram credential %s/%s: %w", c.User, c.Mechanism, err)
	}
	return nil
}

// DeleteScramCredential implements metadata.CredentialStore.
func (s *Store) DeleteScramCredential(ctx context.Context, user, mechanism string) error {
	n, err := s.db.Write().Exec(ctx, `DELETE FROM scram_credentials WHERE user_name = $1 AND mechanism = $2`, user, mechanism)
	if err := affected(n, err, metadata.ErrNotFound); err != nil {
		return fmt.Errorf("delete scram credential %s/%s: %w", user, mechanism, err)
	}
	return nil
}

// ClusterSecret implements metadata.CredentialStore: an insert that does
// nothing when another agent's came first, then the read of the row.
func (s *Store) ClusterSecret(ctx context.Context, name string) ([]byte, error) {
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh)
	if _, err := s.db.Write().Exec(ctx, `INSERT INTO cluster_secrets (name, secret) VALUES ($1, $2)
		ON CONFLICT (name) DO NOTHING`, name, fresh); err != nil {
		return nil, fmt.Errorf("cluster secret %s: %w", name, err)
	}
	var secret []byte
	if err := s.db.Read().QueryRow(ctx, `SELECT secret FROM cluster_secrets WHERE name = $1`, name).Scan(&secret); err != nil {
		return nil, fmt.Errorf("cluster secret %s: %w", name, err)
	}
	return secret, nil
}
