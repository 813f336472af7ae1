package agent

// The schema registry in the agent: Config.SchemaRegistry (package
// schemaregistry) is served on its own listener (Config.SchemaRegistryAddr,
// Confluent's 8081 in floe dev) and under /schema-registry/ on the HTTP
// listener, behind the HTTP endpoints' authentication (httpauth.go) and,
// with --authorizer, floe's ACLs:
//
//   - a subject is the TOPIC resource "subject:<name>" (a name no topic can
//     have: ':' is not a legal topic character), so kafka-acls grants it
//     like a topic, literal or prefixed ("--topic subject: --resource-pattern-type
//     prefixed" is every subject);
//   - reading a subject (its versions, schemas, config, mode, a
//     compatibility check) needs DESCRIBE on it; registering, deleting and
//     changing its config or mode need ALTER;
//   - the registry's global config and mode need DESCRIBE_CONFIGS (read)
//     and ALTER_CONFIGS (write) on the CLUSTER;
//   - listing subjects and schemas, and reading a schema by id, show only
//     the subjects the principal may DESCRIBE (an id none of whose
//     subjects it may describe answers Confluent's 40403, as if absent).
//
// Super users may do everything, as on the Kafka listeners.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/schemaregistry/validation"
)

// SchemaRegistry is what the agent serves and validates records with
// (schemaregistry.Server).
type SchemaRegistry interface {
	http.Handler
	validation.Registry
}

// SchemaRegistryAddr is the schema registry listener's address, "" when
// it has none.
func (a *Agent) SchemaRegistryAddr() string {
	if a.regLn == nil {
		return ""
	}
	return a.regLn.Addr().String()
}

// subjectResource is the ACL resource name of a registry subject.
func subjectResource(subject string) string { return "subject:" + subject }

// registryHandler is the registry behind authentication and ACLs.
func (a *Agent) registryHandler() http.Handler {
	var h http.Handler = a.cfg.SchemaRegistry
	if a.authzEnabled() {
		h = a.registryACLs(h)
	}
	return a.requireAuth(h)
}

// registryACLs checks each request against the ACLs, as the package
// comment says.
func (a *Agent) registryACLs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal := HTTPPrincipal(r.Context())
		host := r.RemoteAddr
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		may := func(op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
			return a.authz.Allowed(nil, principal, host, op, typ, name)
		}
		write := r.Method != http.MethodGet && r.Method != http.MethodHead
		parts := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
		subjectAt := func(i int) (string, bool) {
			if len(parts) <= i {
				return "", false
			}
			s, err := url.PathUnescape(parts[i])
			return s, err == nil
		}
		switch {
		case parts[0] == "subjects" && len(parts) == 1: // list: filtered
			a.filterRegistry(w, r, next, func(subject string) bool {
				return may(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, subjectResource(subject))
			})
			return
		case parts[0] == "schemas" && (len(parts) == 1 || len(parts) == 2 && parts[1] == "types"):
			a.filterRegistry(w, r, next, func(subject string) bool {
				return may(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, subjectResource(subject))
			})
			return
		case parts[0] == "schemas" && len(parts) >= 3 && parts[1] == "ids":
			id, err := strconv.Atoi(parts[2])
			if err == nil && !a.mayReadSchema(r.Context(), id, func(subject string) bool {
				return may(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, subjectResource(subject))
			}) {
				registryError(w, http.StatusNotFound, 40403, "Schema not found")
				return
			}
			if len(parts) > 3 {
				a.filterRegistry(w, r, next, func(subject string) bool {
					return may(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, subjectResource(subject))
				})
				return
			}
		case (parts[0] == "config" || parts[0] == "mode") && len(parts) == 1:
			op := kmsg.ACLOperationDescribeConfigs
			if write {
				op = kmsg.ACLOperationAlterConfigs
			}
			if !may(op, kmsg.ACLResourceTypeCluster, "kafka-cluster") {
				registryForbidden(w, principal)
				return
			}
		case parts[0] == "subjects" || parts[0] == "config" || parts[0] == "mode" ||
			parts[0] == "compatibility" && len(parts) > 1 && parts[1] == "subjects":
			i := 1
			if parts[0] == "compatibility" {
				i = 2
			}
			subject, ok := subjectAt(i)
			op := kmsg.ACLOperationDescribe
			// A compatibility check and a look-up by schema are reads
			// sent as POSTs.
			lookup := parts[0] == "subjects" && len(parts) == 2 && r.Method == http.MethodPost
			if write && parts[0] != "compatibility" && !lookup {
				op = kmsg.ACLOperationAlter
			}
			if ok && !may(op, kmsg.ACLResourceTypeTopic, subjectResource(subject)) {
				registryForbidden(w, principal)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// mayReadSchema reports whether one of the subjects of schema id may be
// described. An id the registry does not know is left to the registry
// (its own 40403).
func (a *Agent) mayReadSchema(ctx context.Context, id int, may func(string) bool) bool {
	s, err := a.cfg.SchemaRegistry.SchemaByID(ctx, id)
	if err != nil {
		return true
	}
	for _, subject := range s.Subjects {
		if may(subject) {
			return true
		}
	}
	return false
}

// filterRegistry serves r and keeps, of a JSON array answer, the subjects
// (strings) and the schemas ({"subject": …}) that keep says may be seen.
// Other answers pass as they are.
func (a *Agent) filterRegistry(w http.ResponseWriter, r *http.Request, next http.Handler, keep func(string) bool) {
	rec := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
	next.ServeHTTP(rec, r)
	body := rec.body.Bytes()
	var items []json.RawMessage
	if rec.status == http.StatusOK && json.Unmarshal(body, &items) == nil {
		kept := items[:0]
		for _, it := range items {
			var subject string
			if json.Unmarshal(it, &subject) != nil {
				var s struct {
					Subject string `json:"subject"`
				}
				if json.Unmarshal(it, &s) != nil || s.Subject == "" {
					kept = append(kept, it) // not a subject's: the schema types
					continue
				}
				subject = s.Subject
			}
			if keep(subject) {
				kept = append(kept, it)
			}
		}
		if b, err := json.Marshal(kept); err == nil {
			body = b
		}
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.status)
	w.Write(body) //nolint:errcheck
}

type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedResponse) WriteHeader(status int)      { b.status = status }

// registryForbidden answers as Confluent's authorizer plugins do: 403
// with error code 40301.
func registryForbidden(w http.ResponseWriter, principal string) {
	registryError(w, http.StatusForbidden, 40301, fmt.Sprintf("User %s is denied operations on this resource", strings.TrimPrefix(principal, "User:")))
}

func registryError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error_code": code, "message": msg}) //nolint:errcheck
}

// errNoRegistry: validation is on for a topic but the agent serves no
// registry.
var errNoRegistry = errors.New("schema validation is on for the topic, but this agent serves no schema registry")
