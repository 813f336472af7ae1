package iceberg

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// RESTHandler serves cat as a read-only Iceberg REST catalog (the paths of
// Iceberg's rest-catalog-open-api.yaml, without a prefix) under mount, e.g.
// "/iceberg": engines are pointed at http://AGENT:8080/iceberg. Reads are
// served; every write answers 405 with the spec's error body, since tables
// are written by floe's converter alone.
func RESTHandler(mount string, cat *Catalog, log *slog.Logger) http.Handler {
	h := &restHandler{cat: cat, log: log}
	mux := http.NewServeMux()
	p := strings.TrimSuffix(mount, "/") + "/v1"
	mux.HandleFunc("GET "+p+"/config", h.config)
	mux.HandleFunc("GET "+p+"/namespaces", h.listNamespaces)
	mux.HandleFunc("GET "+p+"/namespaces/{ns}", h.namespace)
	mux.HandleFunc("HEAD "+p+"/namespaces/{ns}", h.namespace)
	mux.HandleFunc("GET "+p+"/namespaces/{ns}/tables", h.listTables)
	mux.HandleFunc("GET "+p+"/namespaces/{ns}/tables/{table}", h.loadTable)
	mux.HandleFunc("HEAD "+p+"/namespaces/{ns}/tables/{table}", h.loadTable)
	mux.HandleFunc("POST "+p+"/namespaces/{ns}/tables/{table}/metrics", h.reportMetrics)
	for _, w := range []string{
		"POST " + p + "/namespaces",
		"DELETE " + p + "/namespaces/{ns}",
		"POST " + p + "/namespaces/{ns}/properties",
		"POST " + p + "/namespaces/{ns}/tables",
		"POST " + p + "/namespaces/{ns}/register",
		"POST " + p + "/namespaces/{ns}/tables/{table}",
		"DELETE " + p + "/namespaces/{ns}/tables/{table}",
		"POST " + p + "/tables/rename",
		"POST " + p + "/transactions/commit",
	} {
		mux.HandleFunc(w, h.readOnly)
	}
	mux.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NoSuchEndpointException", "no endpoint "+r.Method+" "+r.URL.Path)
	})
	return mux
}

type restHandler struct {
	cat *Catalog
	log *slog.Logger
}

// endpoints are the routes advertised in /v1/config; clients that read
// them call nothing else.
var endpoints = []string{
	"GET /v1/{prefix}/namespaces",
	"GET /v1/{prefix}/namespaces/{namespace}",
	"HEAD /v1/{prefix}/namespaces/{namespace}",
	"GET /v1/{prefix}/namespaces/{namespace}/tables",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
}

func (h *restHandler) config(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"defaults":  map[string]string{},
		"overrides": map[string]string{},
		"endpoints": endpoints,
	})
}

// namespaceOf decodes a {namespace} path segment: levels are joined by the
// unit separator (%1F), which the mux has already unescaped.
func namespaceOf(r *http.Request) []string { return strings.Split(r.PathValue("ns"), "\x1f") }

// ours reports whether ns is the catalog's one namespace; if not, it has
// answered 404.
func (h *restHandler) ours(w http.ResponseWriter, r *http.Request, ns []string) bool {
	if slices.Equal(ns, h.cat.ns) {
		return true
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusNotFound)
		return false
	}
	writeError(w, http.StatusNotFound, "NoSuchNamespaceException", "namespace does not exist: "+strings.Join(ns, "."))
	return false
}

// page reads pageToken and pageSize. The token is the last name of the
// previous page; names are listed in order.
func page(w http.ResponseWriter, r *http.Request) (after string, size int, ok bool) {
	q := r.URL.Query()
	size = -1
	if s := q.Get("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, "BadRequestException", "pageSize must be a positive integer, not "+strconv.Quote(s))
			return "", 0, false
		}
		size = n
	}
	return q.Get("pageToken"), size, true
}

// paginate returns the names after the token, at most size, and the next
// token (nil when this page is the last).
func paginate(names []string, after string, size int) ([]string, any) {
	slices.Sort(names)
	if after != "" {
		i, _ := slices.BinarySearch(names, after)
		if i < len(names) && names[i] == after {
			i++
		}
		names = names[i:]
	}
	if size < 0 || len(names) <= size {
		return names, nil
	}
	return names[:size], names[size-1]
}

func (h *restHandler) listNamespaces(w http.ResponseWriter, r *http.Request) {
	after, size, ok := page(w, r)
	if !ok {
		return
	}
	var names []string
	if parent := r.URL.Query().Get("parent"); parent == "" {
		names = []string{h.cat.ns[0]}
	} else if !slices.Equal(strings.Split(parent, "\x1f"), h.cat.ns) {
		writeError(w, http.StatusNotFound, "NoSuchNamespaceException", "namespace does not exist: "+parent)
		return
	}
	names, next := paginate(names, after, size)
	out := make([][]string, len(names))
	for i, n := range names {
		out[i] = []string{n}
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": out, "next-page-token": next})
}

func (h *restHandler) namespace(w http.ResponseWriter, r *http.Request) {
	ns := namespaceOf(r)
	if !h.ours(w, r, ns) {
		return
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	props, err := h.cat.cat.LoadNamespaceProperties(r.Context(), h.cat.ns)
	if err != nil {
		h.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespace": ns, "properties": props})
}

func (h *restHandler) listTables(w http.ResponseWriter, r *http.Request) {
	ns := namespaceOf(r)
	if !h.ours(w, r, ns) {
		return
	}
	after, size, ok := page(w, r)
	if !ok {
		return
	}
	var names []string
	for id, err := range h.cat.cat.ListTables(r.Context(), h.cat.ns) {
		if err != nil {
			h.internal(w, r, err)
			return
		}
		names = append(names, id[len(id)-1])
	}
	names, next := paginate(names, after, size)
	ids := make([]map[string]any, len(names))
	for i, n := range names {
		ids[i] = map[string]any{"namespace": ns, "name": n}
	}
	writeJSON(w, http.StatusOK, map[string]any{"identifiers": ids, "next-page-token": next})
}

func (h *restHandler) loadTable(w http.ResponseWriter, r *http.Request) {
	ns := namespaceOf(r)
	if !h.ours(w, r, ns) {
		return
	}
	name := r.PathValue("table")
	tbl, err := h.cat.cat.LoadTable(r.Context(), append(table.Identifier{}, append(h.cat.ns, name)...))
	if errors.Is(err, catalog.ErrNoSuchTable) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		writeError(w, http.StatusNotFound, "NoSuchTableException", "table does not exist: "+strings.Join(ns, ".")+"."+name)
		return
	}
	if err != nil {
		h.internal(w, r, err)
		return
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	config := map[string]string{}
	for k, v := range h.cat.reader {
		config[k] = v
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"metadata-location": tbl.MetadataLocation(),
		"metadata":          tbl.Metadata(),
		"config":            config,
	})
}

// reportMetrics accepts scan and commit reports (Java clients post them
// after every scan) and drops them.
func (h *restHandler) reportMetrics(w http.ResponseWriter, r *http.Request) {
	if !h.ours(w, r, namespaceOf(r)) {
		return
	}
	var report map[string]any
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&report); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", "metrics report is not a JSON object: "+err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *restHandler) readOnly(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusMethodNotAllowed, "UnsupportedOperationException",
		"floe's Iceberg catalog is read-only: tables are written by floe's converter (topic config floe.iceberg.enabled)")
}

func (h *restHandler) internal(w http.ResponseWriter, r *http.Request, err error) {
	h.log.Warn("iceberg rest request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	writeError(w, http.StatusInternalServerError, "ServiceFailureException", err.Error())
}

// writeError answers the spec's ErrorModel.
func writeError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": code}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"encoding the answer failed","type":"ServiceFailureException","code":500}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}
