package schemaregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"floe/metadata"
	"floe/schemaregistry/format"
)

// Config configures a Server.
type Config struct {
	// Store holds the registry's state; every Server on one store serves
	// the same registry.
	Store metadata.SchemaStore
	// Formats are the schema types served, keyed by schemaType (AVRO,
	// JSON, PROTOBUF); DefaultFormats when nil.
	Formats map[string]format.Format
	// Logger is the registry's, its component named by the caller.
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body (default 16 MiB); a larger one
	// is answered 413.
	MaxBodyBytes int64
	// MaxSchemaBytes bounds a schema's text (default 1 MiB, what
	// Confluent's Kafka-backed store takes in one record); a larger one
	// is answered 42209.
	MaxSchemaBytes int
	// CacheSize bounds the parsed schemas kept by id (default 10,000).
	CacheSize int
	// SubjectTTL is how long a subject's versions read for SubjectHasID
	// and LatestSchema are trusted (default 10 s): a version registered
	// through another agent is seen after at most that long.
	SubjectTTL time.Duration
	// Timeout bounds one request's store work (default 30 s); past it the
	// answer is 50002.
	Timeout time.Duration
}

func (c *Config) defaults() {
	if c.Formats == nil {
		c.Formats = DefaultFormats()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 16 << 20
	}
	if c.MaxSchemaBytes <= 0 {
		c.MaxSchemaBytes = 1 << 20
	}
	if c.CacheSize <= 0 {
		c.CacheSize = 10000
	}
	if c.SubjectTTL <= 0 {
		c.SubjectTTL = 10 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
}

// Server serves Confluent's schema registry API over a metadata store. It
// is an http.Handler; several Servers (one per agent) on one store are one
// registry. Its caches (cache.go) are its own, behind their mutex; the
// store is the only shared state.
type Server struct {
	cfg   Config
	store metadata.SchemaStore
	log   *slog.Logger
	mux   *http.ServeMux
	cache *cache
}

// New returns a Server.
func New(cfg Config) *Server {
	cfg.defaults()
	s := &Server{cfg: cfg, store: cfg.Store, log: cfg.Logger, mux: http.NewServeMux()}
	s.cache = newCache(cfg.CacheSize, cfg.SubjectTTL)
	s.routes()
	return s
}

// handler is one endpoint: it answers a value written as JSON, or an error.
type handler func(ctx context.Context, r *http.Request) (any, error)

func (s *Server) routes() {
	for pattern, h := range map[string]handler{
		"GET /{$}":                                                  s.getRoot,
		"GET /schemas/types":                                        s.getTypes,
		"GET /schemas":                                              s.getSchemas,
		"GET /schemas/ids/{id}":                                     s.getSchemaByID,
		"GET /schemas/ids/{id}/schema":                              s.getRawSchemaByID,
		"GET /schemas/ids/{id}/subjects":                            s.getSubjectsByID,
		"GET /schemas/ids/{id}/versions":                            s.getVersionsByID,
		"GET /schemas/guids/{guid}":                                 s.getSchemaByGUID,
		"GET /schemas/guids/{guid}/ids":                             s.getIDsByGUID,
		"GET /subjects":                                             s.getSubjects,
		"POST /subjects/{subject}":                                  s.lookup,
		"DELETE /subjects/{subject}":                                s.deleteSubject,
		"GET /subjects/{subject}/metadata":                          s.getLatestWithMetadata,
		"GET /subjects/{subject}/versions":                          s.getVersions,
		"POST /subjects/{subject}/versions":                         s.register,
		"GET /subjects/{subject}/versions/{version}":                s.getVersion,
		"DELETE /subjects/{subject}/versions/{version}":             s.deleteVersion,
		"GET /subjects/{subject}/versions/{version}/schema":         s.getRawVersion,
		"GET /subjects/{subject}/versions/{version}/referencedby":   s.getReferencedBy,
		"GET /config":                                               s.getConfig,
		"PUT /config":                                               s.putConfig,
		"DELETE /config":                                            s.deleteConfig,
		"GET /config/{subject}":                                     s.getConfig,
		"PUT /config/{subject}":                                     s.putConfig,
		"DELETE /config/{subject}":                                  s.deleteConfig,
		"GET /mode":                                                 s.getMode,
		"PUT /mode":                                                 s.putMode,
		"DELETE /mode":                                              s.deleteMode,
		"GET /mode/{subject}":                                       s.getMode,
		"PUT /mode/{subject}":                                       s.putMode,
		"DELETE /mode/{subject}":                                    s.deleteMode,
		"POST /compatibility/subjects/{subject}/versions":           s.checkAll,
		"POST /compatibility/subjects/{subject}/versions/{version}": s.checkVersion,
		"GET /contexts":                                             s.getContexts,
	} {
		s.mux.Handle(pattern, s.serve(h))
	}
}

const contentType = "application/vnd.schemaregistry.v1+json"

// ServeHTTP implements http.Handler. Paths no route has get Confluent's
// 404 (or 405) body rather than the mux's text.
// A path's trailing slash is dropped first: Jersey matches /subjects/s/
// as /subjects/s, and clients send both.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
		r2 := *r
		u := *r.URL
		u.Path = strings.TrimSuffix(p, "/")
		u.RawPath = strings.TrimSuffix(u.RawPath, "/")
		r2.URL = &u
		r = &r2
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		// The mux's own answer decides between 404 and 405.
		rec := &statusRecorder{header: http.Header{}}
		s.mux.ServeHTTP(rec, r)
		if rec.status == http.StatusMethodNotAllowed {
			writeError(w, errHTTP(http.StatusMethodNotAllowed))
			return
		}
		writeError(w, errHTTP(http.StatusNotFound))
		return
	}
	s.mux.ServeHTTP(w, r)
}

type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header         { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *statusRecorder) WriteHeader(status int)      { r.status = status }

func (s *Server) serve(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("registry handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p)
				writeError(w, newErr(http.StatusInternalServerError, 50001, "Error in the backend data store"))
			}
		}()
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		defer cancel()
		v, err := h(ctx, r)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				if errors.Is(err, context.DeadlineExceeded) {
					ae = errTimeout("Operation timed out")
				} else {
					s.log.Warn("registry store error", "method", r.Method, "path", r.URL.Path, "err", err)
					ae = errStore("Error in the backend data store")
				}
			}
			writeError(w, ae)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if raw, ok := v.(rawJSON); ok {
		b.WriteString(string(raw))
	} else if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString(`{"error_code":50001,"message":"Error in the backend data store"}`)
	} else {
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// rawJSON is an answer written as it is: a schema's own text (…/schema).
type rawJSON string

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}{e.code, e.message})
}

// acceptedTypes are the request content types Confluent's resources
// consume.
var acceptedTypes = map[string]bool{
	"application/vnd.schemaregistry.v1+json": true,
	"application/vnd.schemaregistry+json":    true,
	"application/json":                       true,
	"application/octet-stream":               true,
}

// decodeBody reads a request's JSON body into v. Unknown fields are
// ignored, as Confluent's entities do (newer clients send fields older
// registries do not know).
func (s *Server) decodeBody(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !acceptedTypes[mt] {
			return errHTTP(http.StatusUnsupportedMediaType)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errHTTP(http.StatusRequestEntityTooLarge)
		}
		return newErr(http.StatusBadRequest, http.StatusBadRequest, "%s", err.Error())
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return newErr(http.StatusUnprocessableEntity, http.StatusUnprocessableEntity, "Request body is missing")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return newErr(http.StatusUnprocessableEntity, http.StatusUnprocessableEntity,
				"Cannot deserialize value of type %s from %s (field %q)", ute.Type, ute.Value, ute.Field)
		}
		return newErr(http.StatusBadRequest, http.StatusBadRequest, "Unexpected JSON: %s", err.Error())
	}
	if dec.More() {
		return newErr(http.StatusBadRequest, http.StatusBadRequest, "Unexpected content after the JSON body")
	}
	return nil
}

// Query parameters, read as Jersey reads them: a boolean is true only
// when "true" (any case); a bad integer is Jersey's 404.
func queryBool(r *http.Request, name string) bool {
	return strings.EqualFold(r.URL.Query().Get(name), "true")
}

func queryInt(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, errHTTP(http.StatusNotFound)
	}
	return int(n), nil
}

// subjectParam returns the path's subject, refused when Confluent refuses
// it (empty, or with control characters). A subject qualified with the
// default context (":.:s") is the subject itself, as Confluent normalizes
// it.
func subjectParam(r *http.Request) (string, error) {
	subject := strings.TrimPrefix(r.PathValue("subject"), ":.:")
	if subject == "" || strings.ContainsFunc(subject, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		return "", errInvalidSubject(subject)
	}
	return subject, nil
}

// latest is the version number "latest" and -1 stand for.
const latest = -1

// parseVersion reads a version path parameter as Confluent's VersionId
// does: "latest", -1, or 1 to 2^31-1.
func parseVersion(v string) (int, error) {
	if v == "latest" {
		return latest, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || (n < 1 && n != latest) {
		return 0, errInvalidVersion(v)
	}
	return int(n), nil
}

func (s *Server) getRoot(context.Context, *http.Request) (any, error) {
	return struct{}{}, nil
}

func (s *Server) getContexts(context.Context, *http.Request) (any, error) {
	return []string{"."}, nil
}

func (s *Server) getTypes(context.Context, *http.Request) (any, error) {
	types := []string{}
	for _, t := range []string{format.JSON, format.Protobuf, format.Avro} {
		if _, ok := s.cfg.Formats[t]; ok {
			types = append(types, t)
		}
	}
	return types, nil
}
