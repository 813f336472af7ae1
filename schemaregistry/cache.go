package schemaregistry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"floe/metadata"
	"floe/schemaregistry/format"
)

// Errors of the exported look-ups, for the broker's validation.
var (
	ErrUnknownSchema  = errors.New("schemaregistry: unknown schema id")
	ErrUnknownSubject = errors.New("schemaregistry: subject has no live version")
)

// Schema is a registered schema, parsed with its references.
type Schema struct {
	ID         int
	Type       string // AVRO, JSON or PROTOBUF
	Parsed     format.Schema
	References []metadata.SchemaReference
	// Subjects are the subjects with a live version of the schema, as of
	// at most Config.SubjectTTL ago.
	Subjects []string
}

// cache holds parsed schemas by id (immutable, so never stale; bounded,
// an arbitrary one dropped when full) and, for at most ttl, the versions
// of subjects and the subjects of ids. mu guards every field below it.
type cache struct {
	max int
	ttl time.Duration
	now func() time.Time

	mu       sync.Mutex
	schemas  map[int]*parsedSchema
	subjects map[string]subjectVersions
	usedBy   map[int]subjectsOfID
}

type parsedSchema struct {
	rec    metadata.RegisteredSchema
	parsed format.Schema
}

type subjectVersions struct {
	at       time.Time
	versions []metadata.SubjectVersion
}

type subjectsOfID struct {
	at       time.Time
	subjects []string
}

func newCache(max int, ttl time.Duration) *cache {
	return &cache{max: max, ttl: ttl, now: time.Now,
		schemas: map[int]*parsedSchema{}, subjects: map[string]subjectVersions{}, usedBy: map[int]subjectsOfID{}}
}

func (c *cache) schema(id int) *parsedSchema {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.schemas[id]
}

func (c *cache) putSchema(p *parsedSchema) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.schemas) >= c.max {
		for id := range c.schemas {
			delete(c.schemas, id)
			break
		}
	}
	c.schemas[p.rec.ID] = p
}

// forget drops what this Server's own write changed, so its next answers
// read the store.
func (c *cache) forget(subject string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.subjects, subject)
	clear(c.usedBy)
}

// maxRefDepth bounds how deep references nest: stored references can only
// name versions registered before, but an import can write any, and a
// cycle must end in an error, not a stack overflow.
const maxRefDepth = 32

// parsed returns the schema with id, parsed, from the cache or the store.
func (s *Server) parsed(ctx context.Context, r metadata.SchemaReader, id int) (*parsedSchema, error) {
	return s.parsedAt(ctx, r, id, 0)
}

func (s *Server) parsedAt(ctx context.Context, r metadata.SchemaReader, id, depth int) (*parsedSchema, error) {
	if p := s.cache.schema(id); p != nil {
		return p, nil
	}
	rec, err := r.SchemaByID(ctx, id)
	if err != nil {
		return nil, err
	}
	f, ok := s.cfg.Formats[rec.Type]
	if !ok {
		return nil, errInvalidSchema("Invalid schema type " + rec.Type)
	}
	refs, _, err := s.resolveRefs(ctx, r, rec.References, depth)
	if err != nil {
		return nil, err
	}
	ps, err := parseSafely(f, rec.Schema, refs)
	if err != nil {
		return nil, errInvalidSchema(err.Error())
	}
	p := &parsedSchema{rec: rec, parsed: ps}
	s.cache.putSchema(p)
	return p, nil
}

// parseSafely parses with f, a panic in a format's parser being an
// invalid schema (a schema is user input).
func parseSafely(f format.Format, text string, refs []format.Reference) (sc format.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			sc, err = nil, messageError(fmt.Sprintf("Invalid schema of type %s, details: %v", f.Type(), p))
		}
	}()
	return f.Parse(text, refs)
}

// messageError is an error whose text is a client's message as it is
// (Confluent's are capitalized).
type messageError string

func (e messageError) Error() string { return string(e) }

// resolveRefs resolves references for a format's Parse, and returns them
// with their versions resolved ("latest" and -1 become a number), as they
// are stored.
func (s *Server) resolveRefs(ctx context.Context, r metadata.SchemaReader, refs []metadata.SchemaReference, depth int) ([]format.Reference, []metadata.SchemaReference, error) {
	if len(refs) == 0 {
		return nil, nil, nil
	}
	if depth >= maxRefDepth {
		return nil, nil, errInvalidSchema("Invalid schema, details: references nested too deeply or circular")
	}
	out := make([]format.Reference, 0, len(refs))
	stored := make([]metadata.SchemaReference, 0, len(refs))
	for _, ref := range refs {
		v, err := findVersion(ctx, r, ref.Subject, ref.Version, true)
		if err != nil {
			return nil, nil, err
		}
		if v == nil {
			return nil, nil, errInvalidSchema(fmt.Sprintf("Invalid schema, details: reference %q to subject '%s' version %d not found",
				ref.Name, ref.Subject, ref.Version))
		}
		p, err := s.parsedAt(ctx, r, v.SchemaID, depth+1)
		if err != nil {
			return nil, nil, err
		}
		inner, _, err := s.resolveRefs(ctx, r, p.rec.References, depth+1)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, format.Reference{Name: ref.Name, Subject: ref.Subject, Version: v.Version,
			Schema: p.rec.Schema, References: inner})
		stored = append(stored, metadata.SchemaReference{Name: ref.Name, Subject: ref.Subject, Version: v.Version})
	}
	return out, stored, nil
}

// findVersion returns a subject's version (latest: the last), nil if there
// is none; soft-deleted versions count when deleted.
func findVersion(ctx context.Context, r metadata.SchemaReader, subject string, version int, deleted bool) (*metadata.SubjectVersion, error) {
	vs, err := r.SubjectVersions(ctx, subject)
	if err != nil {
		return nil, err
	}
	vs = live(vs, deleted)
	if len(vs) == 0 {
		return nil, nil
	}
	if version == latest {
		return &vs[len(vs)-1], nil
	}
	for i := range vs {
		if vs[i].Version == version {
			return &vs[i], nil
		}
	}
	return nil, nil
}

// live returns the versions that are not soft-deleted (all when deleted).
func live(vs []metadata.SubjectVersion, deleted bool) []metadata.SubjectVersion {
	if deleted {
		return vs
	}
	return slices.DeleteFunc(slices.Clone(vs), func(v metadata.SubjectVersion) bool { return v.Deleted })
}

// SchemaByID returns the schema with id, parsed: what the broker's
// validation decodes a record's payload with. Once warm it reads no store
// (ids are immutable); its Subjects are re-read after Config.SubjectTTL.
// ErrUnknownSchema if there is none.
func (s *Server) SchemaByID(ctx context.Context, id int) (Schema, error) {
	p, err := s.parsed(ctx, s.store.Schemas(), id)
	if errors.Is(err, metadata.ErrNotFound) {
		return Schema{}, fmt.Errorf("schema %d: %w", id, ErrUnknownSchema)
	}
	if err != nil {
		return Schema{}, err
	}
	subjects, err := s.subjectsOf(ctx, id)
	if err != nil {
		return Schema{}, err
	}
	return Schema{ID: id, Type: p.rec.Type, Parsed: p.parsed, References: p.rec.References, Subjects: subjects}, nil
}

func (s *Server) subjectsOf(ctx context.Context, id int) ([]string, error) {
	c := s.cache
	c.mu.Lock()
	e, ok := c.usedBy[id]
	c.mu.Unlock()
	if ok && c.now().Sub(e.at) < c.ttl {
		return e.subjects, nil
	}
	vs, err := s.store.Schemas().VersionsOfSchema(ctx, id)
	if err != nil {
		return nil, err
	}
	var subjects []string
	for _, v := range live(vs, false) {
		if !slices.Contains(subjects, v.Subject) {
			subjects = append(subjects, v.Subject)
		}
	}
	c.mu.Lock()
	if len(c.usedBy) >= c.max {
		clear(c.usedBy)
	}
	c.usedBy[id] = subjectsOfID{at: c.now(), subjects: subjects}
	c.mu.Unlock()
	return subjects, nil
}

// missRecheck is how old a subject's cached versions may be when they
// lack an id asked for: a schema registered through another agent a
// moment ago is found at the next look-up after that, not after the TTL,
// while a producer sending an unknown id costs at most one store read a
// second.
const missRecheck = time.Second

// versionsOf returns the live versions of subject, read at most maxAge
// ago.
func (s *Server) versionsOf(ctx context.Context, subject string, maxAge time.Duration) ([]metadata.SubjectVersion, error) {
	c := s.cache
	c.mu.Lock()
	e, ok := c.subjects[subject]
	c.mu.Unlock()
	if ok && c.now().Sub(e.at) < maxAge {
		return e.versions, nil
	}
	vs, err := s.store.Schemas().SubjectVersions(ctx, subject)
	if err != nil {
		return nil, err
	}
	vs = live(vs, false)
	c.mu.Lock()
	if len(c.subjects) >= c.max {
		clear(c.subjects)
	}
	c.subjects[subject] = subjectVersions{at: c.now(), versions: vs}
	c.mu.Unlock()
	return vs, nil
}

// SubjectHasID reports whether subject has a live version of schema id:
// the broker's check that a record's schema id belongs to its topic's
// subject. Answers are at most Config.SubjectTTL old.
func (s *Server) SubjectHasID(ctx context.Context, subject string, id int) (bool, error) {
	has := func(vs []metadata.SubjectVersion) bool {
		return slices.ContainsFunc(vs, func(v metadata.SubjectVersion) bool { return v.SchemaID == id })
	}
	vs, err := s.versionsOf(ctx, subject, s.cache.ttl)
	if err != nil || has(vs) {
		return err == nil, err
	}
	vs, err = s.versionsOf(ctx, subject, min(missRecheck, s.cache.ttl))
	return err == nil && has(vs), err
}

// LatestSchema returns the latest live version of subject and its
// schema, parsed. ErrUnknownSubject if it has none.
func (s *Server) LatestSchema(ctx context.Context, subject string) (Schema, int, error) {
	vs, err := s.versionsOf(ctx, subject, s.cache.ttl)
	if err != nil {
		return Schema{}, 0, err
	}
	if len(vs) == 0 {
		return Schema{}, 0, fmt.Errorf("subject %s: %w", subject, ErrUnknownSubject)
	}
	v := vs[len(vs)-1]
	sc, err := s.SchemaByID(ctx, v.SchemaID)
	return sc, v.Version, err
}
