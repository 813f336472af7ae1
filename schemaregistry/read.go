package schemaregistry

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"floe/metadata"
)

// The reads: GET /schemas…, GET /subjects….

// Confluent's schema.search.default.limit and schema.search.max.limit
// (GET /schemas): a limit above the maximum, or none, is the default.
// Subjects and versions are listed without a limit unless one is asked.
const (
	schemaLimit = 1000
	noLimit     = math.MaxInt32
)

// page cuts items to offset and limit as Confluent does, limit normalized
// to at most max (and max when none or out of range).
func page[T any](items []T, offset, limit, max int) []T {
	if limit <= 0 || limit > max {
		limit = max
	}
	if offset < 0 {
		offset = 0
	}
	if offset >= len(items) {
		return []T{}
	}
	items = items[offset:]
	if len(items) > limit {
		items = items[:limit]
	}
	return items
}

// idParam reads the path's schema id; one that is no int is Jersey's 404.
func idParam(r *http.Request) (int, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil {
		return 0, errHTTP(http.StatusNotFound)
	}
	return int(id), nil
}

// schemaStringJSON is Confluent's SchemaString: a schema by id.
type schemaStringJSON struct {
	Subject    string          `json:"subject,omitempty"`
	Version    int             `json:"version,omitempty"`
	GUID       string          `json:"guid,omitempty"`
	SchemaType string          `json:"schemaType,omitempty"`
	Schema     string          `json:"schema"`
	References []reference     `json:"references,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	RuleSet    json.RawMessage `json:"ruleSet,omitempty"`
	MaxID      int             `json:"maxId,omitempty"`
}

// schemaString is Confluent's SchemaString of p.
func schemaString(r *http.Request, p *parsedSchema) schemaStringJSON {
	return schemaStringJSON{GUID: guidOf(p.rec), SchemaType: p.rec.Type, Schema: schemaText(r, p), References: toRefs(p.rec.References),
		Metadata: rawOrNil(p.rec.Metadata), RuleSet: rawOrNil(p.rec.RuleSet)}
}

// schemaOrNotFound reads schema id for an answer: 40403 when there is
// none.
func (s *Server) schemaOrNotFound(ctx context.Context, id int) (*parsedSchema, error) {
	p, err := s.parsed(ctx, s.store.Schemas(), id)
	if errors.Is(err, metadata.ErrNotFound) {
		return nil, errSchemaIDNotFound(id)
	}
	return p, err
}

func (s *Server) getSchemaByID(ctx context.Context, r *http.Request) (any, error) {
	id, err := idParam(r)
	if err != nil {
		return nil, err
	}
	p, err := s.schemaOrNotFound(ctx, id)
	if err != nil {
		return nil, err
	}
	out := schemaString(r, p)
	// With ?subject=, the version of the schema under that subject too
	// (Confluent 8's SchemaString).
	if subject := r.URL.Query().Get("subject"); subject != "" {
		vs, err := s.store.Schemas().VersionsOfSchema(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, v := range live(vs, false) {
			if v.Subject == subject {
				out.Subject, out.Version = v.Subject, v.Version
			}
		}
	}
	if queryBool(r, "fetchMaxId") {
		if out.MaxID, err = s.store.Schemas().MaxSchemaID(ctx); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Server) getRawSchemaByID(ctx context.Context, r *http.Request) (any, error) {
	id, err := idParam(r)
	if err != nil {
		return nil, err
	}
	p, err := s.schemaOrNotFound(ctx, id)
	if err != nil {
		return nil, err
	}
	return rawSchema(r, p), nil
}

// formatter is what a format's parsed schema may also do: print itself
// as ?format= asks (Protobuf's "serialized" and "ignore_extensions",
// Avro's "resolved").
type formatter interface {
	Formatted(format string) string
}

// schemaText is the text of p an answer carries: as stored, or as the
// request's format parameter asks for it.
func schemaText(r *http.Request, p *parsedSchema) string {
	if f := r.URL.Query().Get("format"); f != "" {
		if fm, ok := p.parsed.(formatter); ok {
			return fm.Formatted(f)
		}
	}
	return p.rec.Schema
}

// rawSchema is a schema's text as the answer's body, as Confluent's
// …/schema endpoints give it (a Java String through Jersey's text
// writer): the text as it is, a Protobuf schema's too.
func rawSchema(r *http.Request, p *parsedSchema) any { return rawJSON(schemaText(r, p)) }

func (s *Server) versionsByID(ctx context.Context, r *http.Request) ([]metadata.SubjectVersion, error) {
	id, err := idParam(r)
	if err != nil {
		return nil, err
	}
	if _, err := s.schemaOrNotFound(ctx, id); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.code == 40403 {
			return nil, errSchemaNotFound()
		}
		return nil, err
	}
	vs, err := s.store.Schemas().VersionsOfSchema(ctx, id)
	if err != nil {
		return nil, err
	}
	vs = live(vs, queryBool(r, "deleted"))
	if subject := r.URL.Query().Get("subject"); subject != "" {
		vs = slices.DeleteFunc(vs, func(v metadata.SubjectVersion) bool { return v.Subject != subject })
	}
	return vs, nil
}

// paged applies the request's offset and limit to items.
func paged[T any](r *http.Request, items []T) ([]T, error) {
	offset, err := queryInt(r, "offset", 0)
	if err != nil {
		return nil, err
	}
	limit, err := queryInt(r, "limit", -1)
	if err != nil {
		return nil, err
	}
	return page(items, offset, limit, noLimit), nil
}

func (s *Server) getSubjectsByID(ctx context.Context, r *http.Request) (any, error) {
	vs, err := s.versionsByID(ctx, r)
	if err != nil {
		return nil, err
	}
	subjects := []string{}
	for _, v := range vs {
		if !slices.Contains(subjects, v.Subject) {
			subjects = append(subjects, v.Subject)
		}
	}
	return paged(r, subjects)
}

type subjectVersionJSON struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

func (s *Server) getVersionsByID(ctx context.Context, r *http.Request) (any, error) {
	vs, err := s.versionsByID(ctx, r)
	if err != nil {
		return nil, err
	}
	out := []subjectVersionJSON{}
	for _, v := range vs {
		out = append(out, subjectVersionJSON{v.Subject, v.Version})
	}
	return paged(r, out)
}

// getSchemas is GET /schemas: subject versions with their schemas.
func (s *Server) getSchemas(ctx context.Context, r *http.Request) (any, error) {
	offset, err := queryInt(r, "offset", 0)
	if err != nil {
		return nil, err
	}
	limit, err := queryInt(r, "limit", -1)
	if err != nil {
		return nil, err
	}
	rd := s.store.Schemas()
	vs, err := rd.AllSubjectVersions(ctx, subjectPrefix(r))
	if err != nil {
		return nil, err
	}
	vs = live(vs, queryBool(r, "deleted"))
	if queryBool(r, "latestOnly") {
		var last []metadata.SubjectVersion
		for i, v := range vs {
			if i+1 == len(vs) || vs[i+1].Subject != v.Subject {
				last = append(last, v)
			}
		}
		vs = last
	}
	vs = page(vs, offset, limit, schemaLimit)
	out := make([]schemaJSON, 0, len(vs))
	for _, v := range vs {
		p, err := s.parsed(ctx, rd, v.SchemaID)
		if err != nil {
			return nil, err
		}
		sj := subjectSchema(v, p.rec)
		sj.Schema = schemaText(r, p)
		out = append(out, sj)
	}
	return out, nil
}

// subjectPrefix is the request's subjectPrefix, Confluent's names of
// every context (":*:") and of the default one (":.:", floe's only) being
// every subject.
func subjectPrefix(r *http.Request) string {
	p := r.URL.Query().Get("subjectPrefix")
	for _, ctx := range []string{":*:", ":.:"} {
		if strings.HasPrefix(p, ctx) {
			return p[len(ctx):]
		}
	}
	return p
}

// getSubjects is GET /subjects.
func (s *Server) getSubjects(ctx context.Context, r *http.Request) (any, error) {
	vs, err := s.store.Schemas().AllSubjectVersions(ctx, subjectPrefix(r))
	if err != nil {
		return nil, err
	}
	deleted, deletedOnly := queryBool(r, "deleted"), queryBool(r, "deletedOnly")
	subjects := []string{}
	for i := 0; i < len(vs); {
		j := i
		anyLive := false
		for ; j < len(vs) && vs[j].Subject == vs[i].Subject; j++ {
			anyLive = anyLive || !vs[j].Deleted
		}
		switch {
		case deletedOnly:
			if !anyLive {
				subjects = append(subjects, vs[i].Subject)
			}
		case deleted || anyLive:
			subjects = append(subjects, vs[i].Subject)
		}
		i = j
	}
	return paged(r, subjects)
}

// getVersions is GET /subjects/{subject}/versions.
func (s *Server) getVersions(ctx context.Context, r *http.Request) (any, error) {
	subject, err := subjectParam(r)
	if err != nil {
		return nil, err
	}
	all, err := s.store.Schemas().SubjectVersions(ctx, subject)
	if err != nil {
		return nil, err
	}
	deletedOnly := queryBool(r, "deletedOnly")
	if len(live(all, queryBool(r, "deleted") || deletedOnly)) == 0 {
		return nil, errSubjectNotFound(subject)
	}
	out := []int{}
	for _, v := range all {
		switch {
		case deletedOnly:
			if v.Deleted {
				out = append(out, v.Version)
			}
		case !v.Deleted:
			out = append(out, v.Version)
		case queryBool(r, "deletedAsNegative"):
			out = append(out, -v.Version)
		case queryBool(r, "deleted"):
			out = append(out, v.Version)
		}
	}
	return out, nil
}

// subjectVersion resolves the path's subject and version: 40401 when the
// subject has no version, 40402 when it lacks this one.
func (s *Server) subjectVersion(ctx context.Context, r *http.Request, deleted bool) (metadata.SubjectVersion, error) {
	subject, err := subjectParam(r)
	if err != nil {
		return metadata.SubjectVersion{}, err
	}
	version, err := parseVersion(r.PathValue("version"))
	if err != nil {
		return metadata.SubjectVersion{}, err
	}
	rd := s.store.Schemas()
	all, err := rd.SubjectVersions(ctx, subject)
	if err != nil {
		return metadata.SubjectVersion{}, err
	}
	// "latest" is the latest live version, whatever deleted says.
	v, err := findVersion(ctx, rd, subject, version, deleted && version != latest)
	if err != nil {
		return metadata.SubjectVersion{}, err
	}
	if v == nil {
		if len(live(all, deleted)) == 0 {
			return metadata.SubjectVersion{}, errSubjectNotFound(subject)
		}
		return metadata.SubjectVersion{}, errVersionNotFound(version)
	}
	return *v, nil
}

func (s *Server) getVersion(ctx context.Context, r *http.Request) (any, error) {
	v, err := s.subjectVersion(ctx, r, queryBool(r, "deleted"))
	if err != nil {
		return nil, err
	}
	p, err := s.parsed(ctx, s.store.Schemas(), v.SchemaID)
	if err != nil {
		return nil, err
	}
	sj := subjectSchema(v, p.rec)
	sj.Schema = schemaText(r, p)
	return sj, nil
}

func (s *Server) getRawVersion(ctx context.Context, r *http.Request) (any, error) {
	v, err := s.subjectVersion(ctx, r, queryBool(r, "deleted"))
	if err != nil {
		return nil, err
	}
	p, err := s.parsed(ctx, s.store.Schemas(), v.SchemaID)
	if err != nil {
		return nil, err
	}
	return rawSchema(r, p), nil
}

// getReferencedBy is …/versions/{version}/referencedby: the ids of the
// schemas that reference the version.
func (s *Server) getReferencedBy(ctx context.Context, r *http.Request) (any, error) {
	v, err := s.subjectVersion(ctx, r, true)
	if err != nil {
		return nil, err
	}
	ids, err := s.referrers(ctx, s.store.Schemas(), v.Subject, v.Version, queryBool(r, "deleted"), "")
	if err != nil {
		return nil, err
	}
	return paged(r, ids)
}

// referrers returns the ids of schemas that reference a subject version
// and are used by a version (a soft-deleted one counts when deleted) of a
// subject other than except.
func (s *Server) referrers(ctx context.Context, rd metadata.SchemaReader, subject string, version int, deleted bool, except string) ([]int, error) {
	ids, err := rd.ReferencedBy(ctx, subject, version)
	if err != nil {
		return nil, err
	}
	out := []int{}
	for _, id := range ids {
		vs, err := rd.VersionsOfSchema(ctx, id)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(live(vs, deleted), func(v metadata.SubjectVersion) bool {
			return v.Subject != except
		}) {
			out = append(out, id)
		}
	}
	return out, nil
}

// getLatestWithMetadata is GET /subjects/{subject}/metadata?key=k&value=v…:
// the newest version whose metadata properties hold every key=value pair
// asked (Confluent's data contracts pick a schema so).
func (s *Server) getLatestWithMetadata(ctx context.Context, r *http.Request) (any, error) {
	subject, err := subjectParam(r)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	keys, values := q["key"], q["value"]
	want := map[string]string{}
	for i := range min(len(keys), len(values)) {
		want[keys[i]] = values[i]
	}
	rd := s.store.Schemas()
	all, err := rd.SubjectVersions(ctx, subject)
	if err != nil {
		return nil, err
	}
	vs := live(all, queryBool(r, "deleted"))
	for i := len(vs) - 1; i >= 0; i-- {
		p, err := s.parsed(ctx, rd, vs[i].SchemaID)
		if err != nil {
			return nil, err
		}
		if p.rec.Metadata == "" {
			continue
		}
		var md struct {
			Properties map[string]string `json:"properties"`
		}
		if json.Unmarshal([]byte(p.rec.Metadata), &md) != nil || md.Properties == nil {
			continue
		}
		matches := true
		for k, v := range want {
			if got, ok := md.Properties[k]; !ok || got != v {
				matches = false
			}
		}
		if matches {
			sj := subjectSchema(vs[i], p.rec)
			sj.Schema = schemaText(r, p)
			return sj, nil
		}
	}
	if len(vs) == 0 {
		return nil, errSubjectNotFound(subject)
	}
	return nil, errSchemaNotFound()
}
