package schemaregistry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"floe/metadata"
	"floe/schemaregistry/format"
)

// Registering, looking up and checking schemas: POST
// /subjects/{s}/versions, POST /subjects/{s}, POST /compatibility/….

type reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// registerRequest is the body of register, look-up and compatibility
// requests (Confluent's RegisterSchemaRequest).
type registerRequest struct {
	Schema     string          `json:"schema"`
	SchemaType string          `json:"schemaType"`
	References []reference     `json:"references"`
	Metadata   json.RawMessage `json:"metadata"`
	RuleSet    json.RawMessage `json:"ruleSet"`
	ID         *int            `json:"id"`
	Version    *int            `json:"version"`
}

// schemaJSON is Confluent's Schema entity: a subject version.
type schemaJSON struct {
	Subject    string          `json:"subject,omitempty"`
	Version    int             `json:"version,omitempty"`
	ID         int             `json:"id"`
	GUID       string          `json:"guid,omitempty"`
	SchemaType string          `json:"schemaType,omitempty"`
	References []reference     `json:"references,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	RuleSet    json.RawMessage `json:"ruleSet,omitempty"`
	Schema     string          `json:"schema"`
}

func toRefs(refs []metadata.SchemaReference) []reference {
	var out []reference
	for _, r := range refs {
		out = append(out, reference(r))
	}
	return out
}

func fromRefs(refs []reference) []metadata.SchemaReference {
	var out []metadata.SchemaReference
	for _, r := range refs {
		out = append(out, metadata.SchemaReference(r))
	}
	return out
}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

func subjectSchema(v metadata.SubjectVersion, rec metadata.RegisteredSchema) schemaJSON {
	return schemaJSON{Subject: v.Subject, Version: v.Version, ID: rec.ID, GUID: guidOf(rec), SchemaType: rec.Type,
		References: toRefs(rec.References), Metadata: rawOrNil(rec.Metadata), RuleSet: rawOrNil(rec.RuleSet), Schema: rec.Schema}
}

// compactJSON is an optional object of the body (metadata, ruleSet) as
// stored: compact, "" when absent or null.
func compactJSON(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// candidate is a request's schema parsed and ready to compare or store.
type candidate struct {
	typ      string
	f        format.Format
	parsed   format.Schema
	text     string // canonical, or normalized when normalizing
	refs     []metadata.SchemaReference
	metadata string
	ruleSet  string
}

func (c *candidate) fingerprint() string {
	h := sha256.New()
	b, _ := json.Marshal([]any{c.typ, c.text, c.refs, c.metadata, c.ruleSet})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// matches reports whether a stored schema is the candidate for a look-up:
// the same type and references, and the same canonical (or normalized)
// form.
func (c *candidate) matches(p *parsedSchema, normalize bool) bool {
	if p.rec.Type != c.typ || !slices.Equal(p.rec.References, c.refs) {
		return false
	}
	if normalize {
		return p.parsed.Normalized() == c.parsed.Normalized()
	}
	return p.rec.Schema == c.text || p.parsed.Canonical() == c.parsed.Canonical()
}

// parseRequest parses a request's schema with its references resolved.
func (s *Server) parseRequest(ctx context.Context, r metadata.SchemaReader, req *registerRequest, normalize bool) (*candidate, error) {
	typ := req.SchemaType
	if typ == "" {
		typ = format.Avro
	}
	f, ok := s.cfg.Formats[typ]
	if !ok {
		return nil, errInvalidSchema("Invalid schema type " + typ)
	}
	if strings.TrimSpace(req.Schema) == "" {
		return nil, errInvalidSchema("Empty schema")
	}
	if len(req.Schema) > s.cfg.MaxSchemaBytes {
		return nil, errSchemaTooLarge()
	}
	for _, ref := range req.References {
		if ref.Subject == "" || ref.Name == "" {
			return nil, errInvalidSchema(fmt.Sprintf("Invalid schema of type %s, details: a reference needs a name and a subject", typ))
		}
	}
	frefs, refs, err := s.resolveRefs(ctx, r, fromRefs(req.References), 0)
	if err != nil {
		return nil, err
	}
	parsed, err := parseSafely(f, req.Schema, frefs)
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "Invalid schema") {
			msg = fmt.Sprintf("Invalid schema of type %s, details: %s", typ, msg)
		}
		return nil, errInvalidSchema(msg)
	}
	c := &candidate{typ: typ, f: f, parsed: parsed, text: parsed.Canonical(), refs: refs}
	if normalize {
		c.text = parsed.Normalized()
	}
	if len(c.text) > s.cfg.MaxSchemaBytes {
		return nil, errSchemaTooLarge()
	}
	if c.metadata, err = compactJSON(req.Metadata); err != nil {
		return nil, errInvalidSchema("Invalid metadata: " + err.Error())
	}
	if c.ruleSet, err = compactJSON(req.RuleSet); err != nil {
		return nil, newErr(http.StatusUnprocessableEntity, 42210, "Invalid ruleSet: %s", err.Error())
	}
	return c, nil
}

// Modes, as Confluent names them.
const (
	modeReadWrite        = "READWRITE"
	modeReadOnly         = "READONLY"
	modeReadOnlyOverride = "READONLY_OVERRIDE"
	modeImport           = "IMPORT"
)

// modeIn returns the mode in force for subject: its own, else the
// registry's, else READWRITE.
func modeIn(ctx context.Context, r metadata.SchemaReader, subject string) (string, error) {
	for _, scope := range []string{subject, ""} {
		m, err := r.SchemaMode(ctx, scope)
		if err == nil {
			return m, nil
		}
		if !errors.Is(err, metadata.ErrNotFound) {
			return "", err
		}
		if scope == "" {
			break
		}
	}
	return modeReadWrite, nil
}

// configIn returns the configuration in force for subject: its own, else
// the registry's, else BACKWARD.
func configIn(ctx context.Context, r metadata.SchemaReader, subject string) (metadata.SchemaConfig, error) {
	for _, scope := range []string{subject, ""} {
		c, err := r.SchemaConfig(ctx, scope)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, metadata.ErrNotFound) {
			return c, err
		}
		if scope == "" {
			break
		}
	}
	return metadata.SchemaConfig{Compatibility: "BACKWARD"}, nil
}

func readOnly(mode string) bool { return mode == modeReadOnly || mode == modeReadOnlyOverride }

func (s *Server) register(ctx context.Context, r *http.Request) (any, error) {
	subject, err := subjectParam(r)
	if err != nil {
		return nil, err
	}
	var req registerRequest
	if err := s.decodeBody(r, &req); err != nil {
		return nil, err
	}
	id, version := 0, 0
	if req.ID != nil && *req.ID > 0 {
		id = *req.ID
	}
	if req.Version != nil && *req.Version > 0 {
		version = *req.Version
	}
	force := queryBool(r, "force")
	if version == 0 {
		found, err := s.alreadyRegistered(ctx, subject, req, id, queryBool(r, "normalize"))
		if err != nil {
			return nil, err
		}
		if found != nil {
			found.Subject = ""
			return *found, nil
		}
	}
	var out schemaJSON
	err = s.store.UpdateSchemas(ctx, func(w metadata.SchemaWriter) error {
		var err error
		out, err = s.registerTx(ctx, w, subject, &req, id, version, queryBool(r, "normalize"), force)
		return err
	})
	s.cache.forget(subject)
	if err != nil {
		return nil, err
	}
	out.Subject = "" // Confluent's RegisterSchemaResponse has none
	return out, nil
}

// registered returns the latest of the live versions that holds the
// candidate (with id, when one is given), or nil.
func (s *Server) registered(ctx context.Context, r metadata.SchemaReader, lives []metadata.SubjectVersion, c *candidate, id int, normalize bool) (*schemaJSON, error) {
	fp := c.fingerprint()
	for i := len(lives) - 1; i >= 0; i-- {
		v := lives[i]
		if id > 0 && v.SchemaID != id {
			continue
		}
		p, err := s.parsed(ctx, r, v.SchemaID)
		if err != nil {
			return &schemaJSON{}, err
		}
		if p.rec.Fingerprint == fp || (c.metadata == p.rec.Metadata && c.ruleSet == p.rec.RuleSet && c.matches(p, normalize)) {
			out := subjectSchema(v, p.rec)
			return &out, nil
		}
	}
	return nil, nil
}

// alreadyRegistered is register's path without the registry's write
// lock: a schema already under the subject is answered from a read, as
// Confluent answers it before it takes its lock (and before it looks at
// the mode). Every producer with auto.register.schemas registers its
// schema at start; those registrations do not queue behind each other.
func (s *Server) alreadyRegistered(ctx context.Context, subject string, req registerRequest, id int, normalize bool) (*schemaJSON, error) {
	rd := s.store.Schemas()
	all, err := rd.SubjectVersions(ctx, subject)
	if err != nil {
		return nil, err
	}
	lives := live(all, false)
	if len(lives) == 0 || strings.TrimSpace(req.Schema) == "" {
		return nil, nil
	}
	cfg, err := configIn(ctx, rd, subject)
	if err != nil {
		return nil, err
	}
	c, err := s.parseRequest(ctx, rd, &req, normalize || cfg.Normalize)
	if err != nil {
		// The locked path answers it.
		return nil, nil
	}
	return s.registered(ctx, rd, lives, c, id, normalize || cfg.Normalize)
}

func (s *Server) registerTx(ctx context.Context, w metadata.SchemaWriter, subject string, req *registerRequest, id, version int, normalize, force bool) (schemaJSON, error) {
	mode, err := modeIn(ctx, w, subject)
	if err != nil {
		return schemaJSON{}, err
	}
	switch {
	case readOnly(mode):
		return schemaJSON{}, errNotPermitted("Subject %s in context . is in read-only mode", subject)
	case id > 0 && mode != modeImport:
		return schemaJSON{}, errNotPermitted("Subject %s in context . is not in import mode", subject)
	case id == 0 && mode != modeReadWrite:
		return schemaJSON{}, errNotPermitted("Subject %s in context . is not in read-write mode", subject)
	}
	all, err := w.SubjectVersions(ctx, subject)
	if err != nil {
		return schemaJSON{}, err
	}
	lives := live(all, false)
	next := 1
	if len(all) > 0 {
		next = all[len(all)-1].Version + 1
	}
	// An empty schema registers the latest one again (with this
	// request's metadata and rule set), as Confluent does.
	if strings.TrimSpace(req.Schema) == "" && mode != modeImport && len(lives) > 0 {
		p, err := s.parsed(ctx, w, lives[len(lives)-1].SchemaID)
		if err != nil {
			return schemaJSON{}, err
		}
		req.Schema, req.SchemaType, req.References = p.rec.Schema, p.rec.Type, toRefs(p.rec.References)
	}
	cfg, err := configIn(ctx, w, subject)
	if err != nil {
		return schemaJSON{}, err
	}
	c, err := s.parseRequest(ctx, w, req, normalize || cfg.Normalize)
	if err != nil {
		return schemaJSON{}, err
	}
	fp := c.fingerprint()

	// Registered under this subject already: its version, no check.
	if version == 0 {
		if found, err := s.registered(ctx, w, lives, c, id, normalize || cfg.Normalize); found != nil || err != nil {
			return *found, err
		}
	}

	if mode != modeImport && !force {
		prev, err := s.parsedVersions(ctx, w, lives)
		if err != nil {
			return schemaJSON{}, err
		}
		if msgs := incompatibilities(cfg.Compatibility, c, prev); len(msgs) > 0 {
			return schemaJSON{}, errIncompatible(subject, msgs)
		}
	}

	switch {
	case version == 0:
		version = next
	case version != next && mode != modeImport:
		return schemaJSON{}, errInvalidSchema("Version is not one more than previous version")
	}

	if id > 0 {
		existing, err := w.SchemaByID(ctx, id)
		switch {
		case err == nil:
			if existing.Fingerprint != fp {
				return schemaJSON{}, errNotPermitted("Overwrite new schema with id %d in context . is not permitted.", id)
			}
		case errors.Is(err, metadata.ErrNotFound):
		default:
			return schemaJSON{}, err
		}
	} else {
		id, err = w.SchemaIDByFingerprint(ctx, fp)
		if errors.Is(err, metadata.ErrNotFound) {
			id, err = w.NextSchemaID(ctx)
		}
		if err != nil {
			return schemaJSON{}, err
		}
	}
	rec := metadata.RegisteredSchema{ID: id, Type: c.typ, Schema: c.text, References: c.refs,
		Metadata: c.metadata, RuleSet: c.ruleSet, Fingerprint: fp}
	if err := w.PutSchema(ctx, rec); err != nil {
		return schemaJSON{}, err
	}
	// Earlier soft-deleted versions of the same schema go, unless
	// something references them (Confluent tombstones them).
	for _, v := range all {
		if !v.Deleted || v.SchemaID != id || v.Version >= version {
			continue
		}
		refs, err := w.ReferencedBy(ctx, subject, v.Version)
		if err != nil {
			return schemaJSON{}, err
		}
		if len(refs) == 0 {
			if err := w.DeleteSubjectVersion(ctx, subject, v.Version); err != nil {
				return schemaJSON{}, err
			}
		}
	}
	sv := metadata.SubjectVersion{Subject: subject, Version: version, SchemaID: id}
	if err := w.PutSubjectVersion(ctx, sv); err != nil {
		return schemaJSON{}, err
	}
	s.log.Info("schema registered", "subject", subject, "version", version, "id", id, "type", c.typ)
	return subjectSchema(sv, rec), nil
}

// versioned is a previous schema of a subject with its version number,
// which Confluent's messages name.
type versioned struct {
	*parsedSchema
	version int
}

// parsedVersions parses the schemas of versions, oldest first.
func (s *Server) parsedVersions(ctx context.Context, r metadata.SchemaReader, vs []metadata.SubjectVersion) ([]versioned, error) {
	out := make([]versioned, 0, len(vs))
	for _, v := range vs {
		p, err := s.parsed(ctx, r, v.SchemaID)
		if err != nil {
			return nil, err
		}
		out = append(out, versioned{p, v.Version})
	}
	return out, nil
}

// levels are Confluent's compatibility levels: which directions a new
// schema is checked in, and against all previous versions or the latest.
var levels = map[string]struct{ backward, forward, transitive bool }{
	"NONE":                {},
	"BACKWARD":            {backward: true},
	"BACKWARD_TRANSITIVE": {backward: true, transitive: true},
	"FORWARD":             {forward: true},
	"FORWARD_TRANSITIVE":  {forward: true, transitive: true},
	"FULL":                {backward: true, forward: true},
	"FULL_TRANSITIVE":     {backward: true, forward: true, transitive: true},
}

// The ways a format may take the names of the schemas' roles in its
// messages ("new" and "old"); Compatible alone calls the reader new.
type (
	compatibleAs interface {
		CompatibleAs(reader, writer format.Schema, readerRole, writerRole string) []string
	}
	compatibleNamed interface {
		CompatibleNamed(reader, writer format.Schema, readerName, writerName string) []string
	}
)

func compatible(f format.Format, reader, writer format.Schema, readerRole, writerRole string) []string {
	switch c := f.(type) {
	case compatibleAs:
		return c.CompatibleAs(reader, writer, readerRole, writerRole)
	case compatibleNamed:
		return c.CompatibleNamed(reader, writer, readerRole, writerRole)
	}
	return f.Compatible(reader, writer)
}

// maxOldSchemaInMessage is where Confluent truncates the old schema it
// quotes in a message.
const maxOldSchemaInMessage = 10 * 1024

// withOld follows findings against a previous schema with its version and
// text, as Confluent's SchemaValidatorBuilder does.
func withOld(msgs []string, p versioned) []string {
	if len(msgs) == 0 {
		return msgs
	}
	msgs = append(msgs, fmt.Sprintf("{oldSchemaVersion: %d}", p.version))
	if old := p.parsed.Canonical(); len(old) <= maxOldSchemaInMessage {
		msgs = append(msgs, "{oldSchema: '"+old+"'}")
	} else {
		msgs = append(msgs, "{oldSchema: <truncated> '"+old[:maxOldSchemaInMessage]+"...'}")
	}
	return msgs
}

// incompatibilities checks c against prev (oldest first) at level, the
// newest first, as Confluent does: the messages against the first
// previous schema it cannot live with and Confluent's closing summary;
// nil when compatible.
func incompatibilities(level string, c *candidate, prev []versioned) []string {
	l := levels[level]
	if !l.transitive && len(prev) > 1 {
		prev = prev[len(prev)-1:]
	}
	for i := len(prev) - 1; i >= 0; i-- {
		p := prev[i]
		var msgs []string
		switch {
		case p.rec.Type != c.typ:
			msgs = []string{"Incompatible because of different schema type"}
		case l.backward && l.forward:
			msgs = compatible(c.f, p.parsed, c.parsed, "old", "new")
			msgs = append(msgs, withOld(compatible(c.f, c.parsed, p.parsed, "new", "old"), p)...)
		case l.backward:
			msgs = withOld(compatible(c.f, c.parsed, p.parsed, "new", "old"), p)
		case l.forward:
			msgs = withOld(compatible(c.f, p.parsed, c.parsed, "old", "new"), p)
		}
		if len(msgs) > 0 {
			return append(msgs, fmt.Sprintf("{validateFields: 'false', compatibility: '%s'}", level))
		}
	}
	return nil
}

// lookup is POST /subjects/{subject}: the version of subject that holds
// the schema.
func (s *Server) lookup(ctx context.Context, r *http.Request) (any, error) {
	subject, err := subjectParam(r)
	if err != nil {
		return nil, err
	}
	var req registerRequest
	if err := s.decodeBody(r, &req); err != nil {
		return nil, err
	}
	rd := s.store.Schemas()
	all, err := rd.SubjectVersions(ctx, subject)
	if err != nil {
		return nil, err
	}
	cfg, err := configIn(ctx, rd, subject)
	if err != nil {
		return nil, err
	}
	// The schema is parsed before the subject is looked at: an invalid
	// one is 42201 under any subject, as in Confluent.
	normalize := queryBool(r, "normalize") || cfg.Normalize
	c, err := s.parseRequest(ctx, rd, &req, normalize)
	if err != nil {
		return nil, err
	}
	vs := live(all, queryBool(r, "deleted"))
	if len(vs) == 0 {
		return nil, errSubjectNotFound(subject)
	}
	for i := len(vs) - 1; i >= 0; i-- {
		p, err := s.parsed(ctx, rd, vs[i].SchemaID)
		if err != nil {
			return nil, err
		}
		if c.matches(p, normalize) {
			sj := subjectSchema(vs[i], p.rec)
			sj.Schema = schemaText(r, p)
			return sj, nil
		}
	}
	return nil, errSchemaNotFound()
}

type compatibilityJSON struct {
	Compatible bool     `json:"is_compatible"`
	Messages   []string `json:"messages,omitzero"`
}

// compatibility answers a check of the body's schema against versions.
func (s *Server) compatibility(ctx context.Context, r *http.Request, subject string, vs []metadata.SubjectVersion) (any, error) {
	var req registerRequest
	if err := s.decodeBody(r, &req); err != nil {
		return nil, err
	}
	verbose := queryBool(r, "verbose")
	answer := func(msgs []string) compatibilityJSON {
		out := compatibilityJSON{Compatible: len(msgs) == 0}
		if verbose {
			out.Messages = append([]string{}, msgs...)
		}
		return out
	}
	rd := s.store.Schemas()
	cfg, err := configIn(ctx, rd, subject)
	if err != nil {
		return nil, err
	}
	c, err := s.parseRequest(ctx, rd, &req, queryBool(r, "normalize") || cfg.Normalize)
	var ae *apiError
	if errors.As(err, &ae) && ae.code == 42201 && verbose {
		return answer([]string{ae.message}), nil
	}
	if err != nil {
		return nil, err
	}
	prev, err := s.parsedVersions(ctx, rd, vs)
	if err != nil {
		return nil, err
	}
	return answer(incompatibilities(cfg.Compatibility, c, prev)), nil
}

func (s *Server) checkAll(ctx context.Context, r *http.Request) (any, error) {
	subject, err := subjectParam(r)
	if err != nil {
		return nil, err
	}
	all, err := s.store.Schemas().SubjectVersions(ctx, subject)
	if err != nil {
		return nil, err
	}
	return s.compatibility(ctx, r, subject, live(all, false))
}

func (s *Server) checkVersion(ctx context.Context, r *http.Request) (any, error) {
	subject, err := subjectParam(r)
	if err != nil {
		return nil, err
	}
	version, err := parseVersion(r.PathValue("version"))
	if err != nil {
		return nil, err
	}
	v, err := findVersion(ctx, s.store.Schemas(), subject, version, false)
	if err != nil {
		return nil, err
	}
	var vs []metadata.SubjectVersion
	switch {
	case v != nil:
		vs = []metadata.SubjectVersion{*v}
	case version != latest:
		return nil, errVersionNotFound(version)
	}
	return s.compatibility(ctx, r, subject, vs)
}
