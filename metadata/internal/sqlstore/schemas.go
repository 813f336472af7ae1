package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"floe/metadata"
)

// The schema registry's rows (metadata/schemas.go). One schemaQ serves the
// reads outside a transaction (Schemas) and the reads and writes inside
// UpdateSchemas. Registries hold thousands of rows, not millions: prefix
// filters run in Go, so the SQL stays the same on both stores.

var (
	_ metadata.SchemaReader = schemaQ{}
	_ metadata.SchemaWriter = schemaQ{}
)

type schemaQ struct{ q Querier }

// Schemas implements metadata.SchemaStore.
func (s *Store) Schemas() metadata.SchemaReader { return schemaQ{s.db.Read()} }

// UpdateSchemas implements metadata.SchemaStore. Its first statement
// writes the registry row, so on PostgreSQL every registry write waits for
// the one before it (SQLite has one writer at a time anyway); later reads
// in the transaction, each its own snapshot under READ COMMITTED, see what
// that one committed.
func (s *Store) UpdateSchemas(ctx context.Context, fn func(w metadata.SchemaWriter) error) error {
	return s.db.WriteTx(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, `UPDATE sr_registry SET writes = writes + 1 WHERE id = 1`); err != nil {
			return fmt.Errorf("lock schema registry: %w", err)
		}
		return fn(schemaQ{q})
	})
}

func (r schemaQ) SchemaByID(ctx context.Context, id int) (metadata.RegisteredSchema, error) {
	sc := metadata.RegisteredSchema{ID: id}
	err := r.q.QueryRow(ctx, `SELECT schema_type, schema, metadata, rule_set, fingerprint FROM sr_schemas WHERE id = $1`,
		int64(id)).Scan(&sc.Type, &sc.Schema, &sc.Metadata, &sc.RuleSet, &sc.Fingerprint)
	if err != nil {
		return sc, fmt.Errorf("schema %d: %w", id, noRows(err, metadata.ErrNotFound))
	}
	rows, err := r.q.Query(ctx, `SELECT name, ref_subject, ref_version FROM sr_references WHERE schema_id = $1 ORDER BY position`, int64(id))
	sc.References, err = collect(rows, err, func(row Row) (ref metadata.SchemaReference, err error) {
		var v int64
		err = row.Scan(&ref.Name, &ref.Subject, &v)
		ref.Version = int(v)
		return ref, err
	})
	if err != nil {
		return sc, fmt.Errorf("schema %d references: %w", id, err)
	}
	return sc, nil
}

func (r schemaQ) SchemaIDByFingerprint(ctx context.Context, fingerprint string) (int, error) {
	var id int64
	err := r.q.QueryRow(ctx, `SELECT id FROM sr_schemas WHERE fingerprint = $1 ORDER BY id LIMIT 1`, fingerprint).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("schema by fingerprint: %w", noRows(err, metadata.ErrNotFound))
	}
	return int(id), nil
}

func (r schemaQ) MaxSchemaID(ctx context.Context) (int, error) {
	var id int64
	if err := r.q.QueryRow(ctx, `SELECT COALESCE(MAX(id), 0) FROM sr_schemas`).Scan(&id); err != nil {
		return 0, fmt.Errorf("max schema id: %w", err)
	}
	return int(id), nil
}

const versionColumns = `subject, version, schema_id, deleted`

func scanVersion(row Row) (v metadata.SubjectVersion, err error) {
	var version, id int64
	err = row.Scan(&v.Subject, &version, &id, &v.Deleted)
	v.Version, v.SchemaID = int(version), int(id)
	return v, err
}

func (r schemaQ) SubjectVersions(ctx context.Context, subject string) ([]metadata.SubjectVersion, error) {
	rows, err := r.q.Query(ctx, `SELECT `+versionColumns+` FROM sr_versions WHERE subject = $1 ORDER BY version`, subject)
	vs, err := collect(rows, err, scanVersion)
	if err != nil {
		return nil, fmt.Errorf("subject versions: %w", err)
	}
	return vs, nil
}

func (r schemaQ) AllSubjectVersions(ctx context.Context, prefix string) ([]metadata.SubjectVersion, error) {
	rows, err := r.q.Query(ctx, `SELECT `+versionColumns+` FROM sr_versions`)
	vs, err := collect(rows, err, scanVersion)
	if err != nil {
		return nil, fmt.Errorf("all subject versions: %w", err)
	}
	vs = slices.DeleteFunc(vs, func(v metadata.SubjectVersion) bool { return !strings.HasPrefix(v.Subject, prefix) })
	sortVersions(vs)
	return vs, nil
}

func sortVersions(vs []metadata.SubjectVersion) {
	slices.SortFunc(vs, func(a, b metadata.SubjectVersion) int {
		if c := strings.Compare(a.Subject, b.Subject); c != 0 {
			return c
		}
		return a.Version - b.Version
	})
}

func (r schemaQ) VersionsOfSchema(ctx context.Context, id int) ([]metadata.SubjectVersion, error) {
	rows, err := r.q.Query(ctx, `SELECT `+versionColumns+` FROM sr_versions WHERE schema_id = $1`, int64(id))
	vs, err := collect(rows, err, scanVersion)
	if err != nil {
		return nil, fmt.Errorf("versions of schema %d: %w", id, err)
	}
	sortVersions(vs)
	return vs, nil
}

func (r schemaQ) ReferencedBy(ctx context.Context, subject string, version int) ([]int, error) {
	rows, err := r.q.Query(ctx, `SELECT DISTINCT f.schema_id FROM sr_references f
		WHERE f.ref_subject = $1 AND f.ref_version = $2
		AND EXISTS (SELECT 1 FROM sr_versions v WHERE v.schema_id = f.schema_id)
		ORDER BY f.schema_id`, subject, int64(version))
	ids, err := collect(rows, err, func(row Row) (int, error) {
		var id int64
		err := row.Scan(&id)
		return int(id), err
	})
	if err != nil {
		return nil, fmt.Errorf("referenced by %s/%d: %w", subject, version, err)
	}
	return ids, nil
}

func (r schemaQ) SchemaConfig(ctx context.Context, subject string) (metadata.SchemaConfig, error) {
	var c metadata.SchemaConfig
	err := r.q.QueryRow(ctx, `SELECT compatibility, normalize FROM sr_configs WHERE subject = $1`, subject).
		Scan(&c.Compatibility, &c.Normalize)
	if err != nil {
		return c, fmt.Errorf("schema config %q: %w", subject, noRows(err, metadata.ErrNotFound))
	}
	return c, nil
}

func (r schemaQ) SchemaMode(ctx context.Context, subject string) (string, error) {
	var m string
	if err := r.q.QueryRow(ctx, `SELECT mode FROM sr_modes WHERE subject = $1`, subject).Scan(&m); err != nil {
		return "", fmt.Errorf("schema mode %q: %w", subject, noRows(err, metadata.ErrNotFound))
	}
	return m, nil
}

// NextSchemaID skips past ids stored by import (PutSchema with a given
// id), so an allocated id is never one already taken.
func (r schemaQ) NextSchemaID(ctx context.Context) (int, error) {
	var id int64
	err := r.q.QueryRow(ctx, `UPDATE sr_registry SET next_id = 1 + CASE WHEN next_id > m.max_id THEN next_id ELSE m.max_id + 1 END
		FROM (SELECT COALESCE(MAX(id), 0) AS max_id FROM sr_schemas) AS m
		WHERE sr_registry.id = 1 RETURNING next_id - 1`).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("next schema id: %w", err)
	}
	return int(id), nil
}

func (r schemaQ) PutSchema(ctx context.Context, sc metadata.RegisteredSchema) error {
	n, err := r.q.Exec(ctx, `INSERT INTO sr_schemas (id, schema_type, schema, metadata, rule_set, fingerprint)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
		int64(sc.ID), sc.Type, sc.Schema, sc.Metadata, sc.RuleSet, sc.Fingerprint)
	if err != nil {
		return fmt.Errorf("put schema %d: %w", sc.ID, err)
	}
	if n == 0 {
		return nil
	}
	for i, ref := range sc.References {
		if _, err := r.q.Exec(ctx, `INSERT INTO sr_references (schema_id, position, name, ref_subject, ref_version)
			VALUES ($1, $2, $3, $4, $5)`, int64(sc.ID), int64(i), ref.Name, ref.Subject, int64(ref.Version)); err != nil {
			return fmt.Errorf("put schema %d reference %d: %w", sc.ID, i, err)
		}
	}
	return nil
}

func (r schemaQ) PutSubjectVersion(ctx context.Context, v metadata.SubjectVersion) error {
	_, err := r.q.Exec(ctx, `INSERT INTO sr_versions (`+versionColumns+`) VALUES ($1, $2, $3, $4)
		ON CONFLICT (subject, version) DO UPDATE SET schema_id = excluded.schema_id, deleted = excluded.deleted`,
		v.Subject, int64(v.Version), int64(v.SchemaID), v.Deleted)
	if err != nil {
		return fmt.Errorf("put subject version %s/%d: %w", v.Subject, v.Version, err)
	}
	return nil
}

func (r schemaQ) DeleteSubjectVersion(ctx context.Context, subject string, version int) error {
	n, err := r.q.Exec(ctx, `DELETE FROM sr_versions WHERE subject = $1 AND version = $2`, subject, int64(version))
	if err = affected(n, err, metadata.ErrNotFound); err != nil {
		return fmt.Errorf("delete subject version %s/%d: %w", subject, version, err)
	}
	return nil
}

func (r schemaQ) SetSchemaConfig(ctx context.Context, subject string, c metadata.SchemaConfig) error {
	_, err := r.q.Exec(ctx, `INSERT INTO sr_configs (subject, compatibility, normalize) VALUES ($1, $2, $3)
		ON CONFLICT (subject) DO UPDATE SET compatibility = excluded.compatibility, normalize = excluded.normalize`,
		subject, c.Compatibility, c.Normalize)
	if err != nil {
		return fmt.Errorf("set schema config %q: %w", subject, err)
	}
	return nil
}

func (r schemaQ) DeleteSchemaConfig(ctx context.Context, subject string) error {
	if _, err := r.q.Exec(ctx, `DELETE FROM sr_configs WHERE subject = $1`, subject); err != nil {
		return fmt.Errorf("delete schema config %q: %w", subject, err)
	}
	return nil
}

func (r schemaQ) SetSchemaMode(ctx context.Context, subject, mode string) error {
	_, err := r.q.Exec(ctx, `INSERT INTO sr_modes (subject, mode) VALUES ($1, $2)
		ON CONFLICT (subject) DO UPDATE SET mode = excluded.mode`, subject, mode)
	if err != nil {
		return fmt.Errorf("set schema mode %q: %w", subject, err)
	}
	return nil
}

func (r schemaQ) DeleteSchemaMode(ctx context.Context, subject string) error {
	if _, err := r.q.Exec(ctx, `DELETE FROM sr_modes WHERE subject = $1`, subject); err != nil {
		return fmt.Errorf("delete schema mode %q: %w", subject, err)
	}
	return nil
}
