package schemaregistry

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"floe/metadata"
)

// The registry's and subjects' settings: /config and /mode. A path
// without a subject is the registry's own ("" in the store).

// configJSON is Confluent's Config, what GET answers.
type configJSON struct {
	Compatibility string `json:"compatibilityLevel"`
	Normalize     bool   `json:"normalize,omitempty"`
}

// configUpdateJSON is Confluent's ConfigUpdateRequest: PUT's body and
// answer.
type configUpdateJSON struct {
	Compatibility *string `json:"compatibility,omitempty"`
	Normalize     *bool   `json:"normalize,omitempty"`
}

func (s *Server) getConfig(ctx context.Context, r *http.Request) (any, error) {
	subject, err := settingsSubject(r)
	if err != nil {
		return nil, err
	}
	rd := s.store.Schemas()
	c, err := rd.SchemaConfig(ctx, subject)
	switch {
	case err == nil:
	case !errors.Is(err, metadata.ErrNotFound):
		return nil, err
	case subject != "" && !queryBool(r, "defaultToGlobal"):
		return nil, errNoSubjectConfig(subject)
	default:
		if c, err = configIn(ctx, rd, ""); err != nil {
			return nil, err
		}
	}
	return configJSON{c.Compatibility, c.Normalize}, nil
}

// settingsSubject is the path's subject, "" for the registry's settings.
// The default context's name (":.:") is the registry too, as in
// Confluent.
func settingsSubject(r *http.Request) (string, error) {
	if p := r.PathValue("subject"); p == "" || p == ":.:" {
		return "", nil
	}
	return subjectParam(r)
}

func (s *Server) putConfig(ctx context.Context, r *http.Request) (any, error) {
	subject, err := settingsSubject(r)
	if err != nil {
		return nil, err
	}
	var req configUpdateJSON
	if err := s.decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Compatibility != nil {
		level := strings.ToUpper(*req.Compatibility)
		if _, ok := levels[level]; !ok {
			return nil, errInvalidCompatibility()
		}
		req.Compatibility = &level
	}
	var stored metadata.SchemaConfig
	err = s.store.UpdateSchemas(ctx, func(w metadata.SchemaWriter) error {
		c, err := w.SchemaConfig(ctx, subject)
		if errors.Is(err, metadata.ErrNotFound) {
			c, err = metadata.SchemaConfig{Compatibility: "BACKWARD"}, nil
			if subject != "" {
				c, err = configIn(ctx, w, "")
			}
		}
		if err != nil {
			return err
		}
		if req.Compatibility != nil {
			c.Compatibility = *req.Compatibility
		}
		if req.Normalize != nil {
			c.Normalize = *req.Normalize
		}
		stored = c
		return w.SetSchemaConfig(ctx, subject, c)
	})
	if err != nil {
		return nil, err
	}
	out := configUpdateJSON{Compatibility: &stored.Compatibility}
	if stored.Normalize || req.Normalize != nil {
		out.Normalize = &stored.Normalize
	}
	return out, nil
}

func (s *Server) deleteConfig(ctx context.Context, r *http.Request) (any, error) {
	subject, err := settingsSubject(r)
	if err != nil {
		return nil, err
	}
	var old metadata.SchemaConfig
	err = s.store.UpdateSchemas(ctx, func(w metadata.SchemaWriter) error {
		c, err := w.SchemaConfig(ctx, subject)
		switch {
		case err == nil:
		case !errors.Is(err, metadata.ErrNotFound):
			return err
		case subject != "":
			return errSubjectNotFound(subject)
		default:
			c = metadata.SchemaConfig{Compatibility: "BACKWARD"}
		}
		old = c
		return w.DeleteSchemaConfig(ctx, subject)
	})
	if err != nil {
		return nil, err
	}
	return configJSON{old.Compatibility, old.Normalize}, nil
}

type modeJSON struct {
	Mode string `json:"mode"`
}

func (s *Server) getMode(ctx context.Context, r *http.Request) (any, error) {
	subject, err := settingsSubject(r)
	if err != nil {
		return nil, err
	}
	rd := s.store.Schemas()
	m, err := rd.SchemaMode(ctx, subject)
	switch {
	case err == nil:
	case !errors.Is(err, metadata.ErrNotFound):
		return nil, err
	case subject != "" && !queryBool(r, "defaultToGlobal"):
		return nil, errNoSubjectMode(subject)
	default:
		if m, err = modeIn(ctx, rd, ""); err != nil {
			return nil, err
		}
	}
	return modeJSON{m}, nil
}

func (s *Server) putMode(ctx context.Context, r *http.Request) (any, error) {
	subject, err := settingsSubject(r)
	if err != nil {
		return nil, err
	}
	var req modeJSON
	if err := s.decodeBody(r, &req); err != nil {
		return nil, err
	}
	mode := strings.ToUpper(req.Mode)
	switch mode {
	case modeReadWrite, modeReadOnly, modeReadOnlyOverride, modeImport:
	default:
		// FORWARD (Confluent's forwarding to another registry) is not
		// served.
		return nil, errInvalidMode()
	}
	force := queryBool(r, "force")
	err = s.store.UpdateSchemas(ctx, func(w metadata.SchemaWriter) error {
		current, err := modeIn(ctx, w, subject)
		if err != nil {
			return err
		}
		if mode == modeImport && current != modeImport && !force {
			if err := s.clearForImport(ctx, w, subject); err != nil {
				return err
			}
		}
		return w.SetSchemaMode(ctx, subject, mode)
	})
	if subject != "" {
		s.cache.forget(subject)
	}
	if err != nil {
		return nil, err
	}
	return req, nil
}

// clearForImport refuses IMPORT where live versions exist (the subject's,
// or any for the registry's mode), and removes the soft-deleted ones, so
// imported ids and versions meet no leftovers.
func (s *Server) clearForImport(ctx context.Context, w metadata.SchemaWriter, subject string) error {
	var vs []metadata.SubjectVersion
	var err error
	if subject == "" {
		vs, err = w.AllSubjectVersions(ctx, "")
	} else {
		vs, err = w.SubjectVersions(ctx, subject)
	}
	if err != nil {
		return err
	}
	if len(live(vs, false)) > 0 {
		return errNotPermitted("Cannot import since found existing subjects")
	}
	for _, v := range vs {
		ids, err := w.ReferencedBy(ctx, v.Subject, v.Version)
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			return errReferenceExists(v.Subject, v.Version)
		}
	}
	for i := len(vs) - 1; i >= 0; i-- {
		if err := w.DeleteSubjectVersion(ctx, vs[i].Subject, vs[i].Version); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) deleteMode(ctx context.Context, r *http.Request) (any, error) {
	subject, err := settingsSubject(r)
	if err != nil {
		return nil, err
	}
	var old string
	err = s.store.UpdateSchemas(ctx, func(w metadata.SchemaWriter) error {
		m, err := w.SchemaMode(ctx, subject)
		if errors.Is(err, metadata.ErrNotFound) {
			if subject != "" {
				return errSubjectNotFound(subject)
			}
			// The registry's mode is READWRITE when none is set.
			m, err = modeReadWrite, nil
		}
		if err != nil {
			return err
		}
		old = m
		return w.DeleteSchemaMode(ctx, subject)
	})
	if subject != "" {
		s.cache.forget(subject)
	}
	if err != nil {
		return nil, err
	}
	return modeJSON{old}, nil
}
