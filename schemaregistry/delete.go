package schemaregistry

import (
	"context"
	"net/http"

	"floe/metadata"
)

// Deleting subjects and versions, with Confluent's two steps: a soft
// delete hides a version (its id still resolves), a permanent delete
// (?permanent=true) removes it and is refused before the soft one.

// deleteSubject is DELETE /subjects/{subject}: the versions deleted.
func (s *Server) deleteSubject(ctx context.Context, r *http.Request) (any, error) {
	subject, err := subjectParam(r)
	if err != nil {
		return nil, err
	}
	permanent := queryBool(r, "permanent")
	var deleted []int
	err = s.store.UpdateSchemas(ctx, func(w metadata.SchemaWriter) error {
		deleted = []int{}
		all, err := w.SubjectVersions(ctx, subject)
		if err != nil {
			return err
		}
		if len(all) == 0 {
			return errSubjectNotFound(subject)
		}
		lives := live(all, false)
		if !permanent && len(lives) == 0 {
			return errSubjectSoftDeleted(subject)
		}
		if err := s.writable(ctx, w, subject); err != nil {
			return err
		}
		targets := lives
		if permanent {
			targets = all
		}
		for _, v := range targets {
			// References from the subject's own versions do not hold
			// it back: they go with it.
			ids, err := s.referrers(ctx, w, subject, v.Version, permanent, subject)
			if err != nil {
				return err
			}
			if len(ids) > 0 {
				return errReferenceExists(subject, v.Version)
			}
			if permanent && !v.Deleted {
				return errSubjectNotSoftDeleted(subject)
			}
			deleted = append(deleted, v.Version)
		}
		if !permanent {
			for _, v := range targets {
				v.Deleted = true
				if err := w.PutSubjectVersion(ctx, v); err != nil {
					return err
				}
			}
			return nil
		}
		// Newest first: a version may reference an older one.
		for i := len(targets) - 1; i >= 0; i-- {
			if err := w.DeleteSubjectVersion(ctx, subject, targets[i].Version); err != nil {
				return err
			}
		}
		return dropSettings(ctx, w, subject)
	})
	s.cache.forget(subject)
	if err != nil {
		return nil, err
	}
	return deleted, nil
}

// writable refuses writes to a subject in read-only mode.
func (s *Server) writable(ctx context.Context, r metadata.SchemaReader, subject string) error {
	mode, err := modeIn(ctx, r, subject)
	if err != nil {
		return err
	}
	if readOnly(mode) {
		return errNotPermitted("Subject %s in context . is in read-only mode", subject)
	}
	return nil
}

// dropSettings removes a subject's mode and config, as Confluent does when
// its last version is deleted permanently.
func dropSettings(ctx context.Context, w metadata.SchemaWriter, subject string) error {
	if err := w.DeleteSchemaMode(ctx, subject); err != nil {
		return err
	}
	return w.DeleteSchemaConfig(ctx, subject)
}

// deleteVersion is DELETE /subjects/{subject}/versions/{version}: the
// version deleted.
func (s *Server) deleteVersion(ctx context.Context, r *http.Request) (any, error) {
	subject, err := subjectParam(r)
	if err != nil {
		return nil, err
	}
	version, err := parseVersion(r.PathValue("version"))
	if err != nil {
		return nil, err
	}
	permanent := queryBool(r, "permanent")
	var out int
	err = s.store.UpdateSchemas(ctx, func(w metadata.SchemaWriter) error {
		all, err := w.SubjectVersions(ctx, subject)
		if err != nil {
			return err
		}
		if version != latest && !permanent {
			if v, _ := findVersion(ctx, w, subject, version, true); v != nil && v.Deleted {
				return errVersionSoftDeleted(subject, version)
			}
		}
		v, err := findVersion(ctx, w, subject, version, version != latest)
		if err != nil {
			return err
		}
		if v == nil {
			if len(all) == 0 {
				return errSubjectNotFound(subject)
			}
			return errVersionNotFound(version)
		}
		if err := s.writable(ctx, w, subject); err != nil {
			return err
		}
		ids, err := s.referrers(ctx, w, subject, v.Version, permanent, "")
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			return errReferenceExists(subject, v.Version)
		}
		if permanent && !v.Deleted {
			return errVersionNotSoftDeleted(subject, v.Version)
		}
		out = v.Version
		if !permanent {
			v.Deleted = true
			return w.PutSubjectVersion(ctx, *v)
		}
		if err := w.DeleteSubjectVersion(ctx, subject, v.Version); err != nil {
			return err
		}
		if len(all) == 1 {
			return dropSettings(ctx, w, subject)
		}
		return nil
	})
	s.cache.forget(subject)
	if err != nil {
		return nil, err
	}
	return out, nil
}
