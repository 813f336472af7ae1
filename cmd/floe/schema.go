package main

// floe schema: the schema registry's REST API (Confluent's, which every
// agent serves) for people and scripts, through franz-go's pkg/sr client.
// Text output is for reading; --output json prints the registry's answer
// exactly as it came, one JSON document, for jq and scripts.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

func init() {
	commands["schema"] = runSchema
}

const schemaUsage = `Usage:
  floe schema list     [SUBJECT] [--prefix P] [--deleted]
  floe schema get      SUBJECT [--version N|latest] [--deleted]
  floe schema get      --id N [SUBJECT]
  floe schema register SUBJECT --file F|- [--type AVRO|JSON|PROTOBUF]
                       [--reference name=subject:version ...] [--normalize]
                       [--id N --version N]   (a subject in IMPORT mode)
  floe schema check    SUBJECT --file F|- [--version N|latest|all] [--verbose]
                       [--type T] [--reference ...] [--normalize]
  floe schema delete   SUBJECT [--version N|latest] [--permanent]
  floe schema config   [SUBJECT] [--set LEVEL | --delete]
  floe schema mode     [SUBJECT] [--set MODE [--force] | --delete]

The schema registry every agent serves (Confluent's REST API), for people and
scripts:

  list      the subjects (--prefix: those starting with P; --deleted: the
            soft-deleted too); with a SUBJECT, its versions
  get       a subject's version (default latest), or a schema by --id
  register  a schema under a subject: its version and id; the type is AVRO
            unless --type says otherwise (PROTOBUF for a .proto file)
  check     whether a schema could be registered under a subject: by default
            against the versions the subject's compatibility level names,
            as registering decides; exits 1 when incompatible (--verbose:
            with the registry's reasons)
  delete    a subject, or one --version of it; soft (ids still resolve) or,
            with --permanent, for good (soft-deleting first if needed)
  config    the compatibility level of a subject (falling back to the
            registry's) or of the registry; --set NONE, BACKWARD, FORWARD,
            FULL, BACKWARD_TRANSITIVE, FORWARD_TRANSITIVE or FULL_TRANSITIVE;
            --delete drops the subject's own level (the registry's: back to
            BACKWARD)
  mode      the mode of a subject or of the registry; --set READWRITE,
            READONLY, READONLY_OVERRIDE or IMPORT (--force: IMPORT even where
            schemas exist); --delete drops the subject's own mode

Every verb takes --registry URL[,URL...] (default http://127.0.0.1:8081, or
$FLOE_SCHEMA_REGISTRY; an agent's HTTP port serves it under
/schema-registry), --user and --password ($FLOE_SCHEMA_REGISTRY_USER,
$FLOE_SCHEMA_REGISTRY_PASSWORD) or --bearer-token
($FLOE_SCHEMA_REGISTRY_BEARER_TOKEN), --output text|json and --timeout.
With --output json each verb prints the registry's JSON answer as it came.
The registry's errors print its error_code and message, and exit 1.

Examples:
  floe schema register orders-value --file order.avsc
  floe schema check orders-value --file order-v2.avsc --verbose
  floe schema get orders-value --output json | jq -r .schema
  floe schema config orders-value --set FULL_TRANSITIVE
  floe schema delete orders-value --version 1 --permanent
`

// schemaSynopsis is the usage lines of verb.
func schemaSynopsis(verb string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(schemaUsage, "\n")[1:] {
		switch {
		case l == "":
			return b.String()
		case strings.HasPrefix(l, "  floe schema "):
			in = strings.HasPrefix(l, "  floe schema "+verb+" ")
		}
		if in {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// schemaEnv names the environment variables the connection flags fall back
// to. Only those: the verbs' own flags (--delete, --permanent, --set…)
// change or remove state and come from the command line alone, never from
// a variable left set in a shell or a container.
var schemaEnv = map[string]string{
	"registry":     "FLOE_SCHEMA_REGISTRY",
	"user":         "FLOE_SCHEMA_REGISTRY_USER",
	"password":     "FLOE_SCHEMA_REGISTRY_PASSWORD",
	"bearer-token": "FLOE_SCHEMA_REGISTRY_BEARER_TOKEN",
}

// schemaCmd is one run of floe schema: its flags, positional arguments and
// where it writes.
type schemaCmd struct {
	verb        string
	in          io.Reader // --file -
	out, errOut io.Writer
	cl          *sr.Client

	registry, user, password, token string
	output                          string
	timeout                         time.Duration

	subject   string // the positional SUBJECT, "" when none
	prefix    string
	deleted   bool
	version   string
	id        int
	file      string
	typ       string
	refs      []sr.SchemaReference
	normalize bool
	verbose   bool
	permanent bool
	set       string
	del       bool
	force     bool
}

// errIncompatible is check's verdict "incompatible": exit 1, the messages
// already printed.
var errIncompatible = errors.New("schema is incompatible")

func runSchema(args []string) error { return runSchemaTo(args, os.Stdin, os.Stdout, os.Stderr) }

func runSchemaTo(args []string, in io.Reader, out, errOut io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(out, schemaUsage)
		return nil
	}
	c := &schemaCmd{verb: args[0], in: in, out: out, errOut: errOut}
	fs, err := c.flags()
	if err != nil {
		fmt.Fprint(errOut, schemaUsage)
		return err
	}
	if err := c.parse(fs, args[1:]); err != nil {
		return err
	}
	opts := []sr.ClientOpt{
		sr.URLs(splitComma(c.registry)...),
		sr.UserAgent("floe-schema"),
		// The whole command is bounded by --timeout through the context.
		sr.HTTPClient(&http.Client{}),
	}
	if c.user != "" || c.password != "" {
		opts = append(opts, sr.BasicAuth(c.user, c.password))
	}
	if c.token != "" {
		opts = append(opts, sr.BearerToken(c.token))
	}
	if c.cl, err = sr.NewClient(opts...); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	switch c.verb {
	case "list":
		return c.list(ctx)
	case "get":
		return c.get(ctx)
	case "register":
		return c.register(ctx)
	case "check":
		return c.check(ctx)
	case "delete":
		return c.delete(ctx)
	case "config":
		return c.config(ctx)
	default:
		return c.mode(ctx)
	}
}

// flags registers the connection flags and the verb's own.
func (c *schemaCmd) flags() (*flag.FlagSet, error) {
	fs := flag.NewFlagSet("floe schema "+c.verb, flag.ContinueOnError)
	fs.SetOutput(c.errOut)
	fs.Usage = func() {
		fmt.Fprintf(c.errOut, "Usage:\n%s\n'floe schema --help' tells more. Flags:\n", schemaSynopsis(c.verb))
		fs.PrintDefaults()
	}
	fs.StringVar(&c.registry, "registry", "http://127.0.0.1:8081", "schema registry `URL`s, comma-separated, tried in turn ($FLOE_SCHEMA_REGISTRY)")
	fs.StringVar(&c.user, "user", "", "Basic auth `user`, a SCRAM user of the cluster ($FLOE_SCHEMA_REGISTRY_USER)")
	fs.StringVar(&c.password, "password", "", "Basic auth password (better given as $FLOE_SCHEMA_REGISTRY_PASSWORD)")
	fs.StringVar(&c.token, "bearer-token", "", "Bearer `token`, an OAUTHBEARER JWT ($FLOE_SCHEMA_REGISTRY_BEARER_TOKEN)")
	fs.StringVar(&c.output, "output", "text", "`format` of the output: text, or json (the registry's answer as it came)")
	fs.StringVar(&c.output, "o", "text", "short for --output")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "bound on the whole command")
	switch c.verb {
	case "list":
		fs.StringVar(&c.prefix, "prefix", "", "only subjects starting with this `prefix`")
		fs.BoolVar(&c.deleted, "deleted", false, "soft-deleted subjects (or versions) too")
	case "get":
		fs.StringVar(&c.version, "version", "", "the subject's `version`: a number or latest (default latest)")
		fs.IntVar(&c.id, "id", 0, "the schema with this `id` (with a SUBJECT: as registered under it)")
		fs.BoolVar(&c.deleted, "deleted", false, "a soft-deleted version too")
	case "register", "check":
		fs.StringVar(&c.file, "file", "", "`file` holding the schema, - for standard input")
		fs.StringVar(&c.typ, "type", "", "schema `type`: AVRO, JSON or PROTOBUF (default AVRO, PROTOBUF for a .proto file)")
		fs.Func("reference", "a schema this one references, `name=subject:version` (repeatable)", func(s string) error {
			r, err := parseReference(s)
			if err == nil {
				c.refs = append(c.refs, r)
			}
			return err
		})
		fs.BoolVar(&c.normalize, "normalize", false, "normalize the schema first (the registry's ?normalize=true)")
		if c.verb == "register" {
			fs.IntVar(&c.id, "id", 0, "register under this schema `id` (IMPORT mode)")
			fs.StringVar(&c.version, "version", "", "register as this `version` (IMPORT mode)")
		} else {
			fs.StringVar(&c.version, "version", "all", "check against `version` N, latest, or all: the versions the subject's level names")
			fs.BoolVar(&c.verbose, "verbose", false, "ask the registry why a schema is incompatible")
		}
	case "delete":
		fs.StringVar(&c.version, "version", "", "delete only this `version`: a number or latest (default: the whole subject)")
		fs.BoolVar(&c.permanent, "permanent", false, "delete for good, ids and all (soft-deleting first if needed)")
	case "config":
		fs.StringVar(&c.set, "set", "", "set the compatibility `level`")
		fs.BoolVar(&c.del, "delete", false, "drop the subject's own level (without a SUBJECT: reset the registry's)")
	case "mode":
		fs.StringVar(&c.set, "set", "", "set the `mode`")
		fs.BoolVar(&c.force, "force", false, "with --set IMPORT: even where schemas exist")
		fs.BoolVar(&c.del, "delete", false, "drop the subject's own mode (without a SUBJECT: reset the registry's)")
	default:
		return nil, fmt.Errorf("schema: unknown verb %q: want list, get, register, check, delete, config or mode", c.verb)
	}
	return fs, nil
}

// parse parses args, flags and the SUBJECT in any order, fills the
// connection flags not given from the environment, and checks what the
// verb needs.
func (c *schemaCmd) parse(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args, schemaEnv)
	if err != nil {
		return err
	}
	if c.output != "text" && c.output != "json" {
		return fmt.Errorf("--output %q: want text or json", c.output)
	}
	if c.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	if len(pos) > 1 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(pos[1:], " "))
	}
	if len(pos) == 1 {
		if pos[0] == "" {
			return errors.New("the subject must not be empty")
		}
		c.subject = pos[0]
	}
	needSubject := c.verb == "register" || c.verb == "check" || c.verb == "delete" || c.verb == "get" && c.id == 0
	if needSubject && c.subject == "" {
		return fmt.Errorf("%s: name a SUBJECT", c.verb)
	}
	switch c.verb {
	case "get":
		if c.id < 0 {
			return errors.New("--id must be positive")
		}
		if c.id > 0 && c.version != "" {
			return errors.New("get: --id or --version, not both")
		}
		if c.version == "" {
			c.version = "latest"
		}
		return checkVersion("--version", c.version, false)
	case "register", "check":
		if c.file == "" {
			return fmt.Errorf("%s: give the schema with --file F (- for standard input)", c.verb)
		}
		if c.typ != "" {
			var t sr.SchemaType
			if err := t.UnmarshalText([]byte(c.typ)); err != nil {
				return fmt.Errorf("--type %q: want AVRO, JSON or PROTOBUF", c.typ)
			}
			c.typ = t.String()
		} else if strings.HasSuffix(c.file, ".proto") {
			c.typ = sr.TypeProtobuf.String()
		}
		if c.verb == "check" {
			return checkVersion("--version", c.version, true)
		}
		if c.id < 0 {
			return errors.New("--id must be positive")
		}
		if c.version != "" {
			if n, err := strconv.Atoi(c.version); err != nil || n < 1 {
				return fmt.Errorf("--version %q: want a positive number", c.version)
			}
		}
	case "delete":
		if c.version != "" {
			return checkVersion("--version", c.version, false)
		}
	case "config", "mode":
		if c.set != "" && c.del {
			return errors.New("--set or --delete, not both")
		}
		if c.force && c.set == "" {
			return errors.New("--force goes with --set")
		}
	}
	return nil
}

// parseArgs parses args, flags and positional arguments in any order
// (splitPositional), and sets each flag of env not given from its
// environment variable. It returns the positional arguments.
func parseArgs(fs *flag.FlagSet, args []string, env map[string]string) ([]string, error) {
	pos, flags := splitPositional(fs, args)
	if err := fs.Parse(flags); err != nil {
		return nil, err
	}
	for name, variable := range env {
		if v, ok := os.LookupEnv(variable); ok && !isSet(fs, name) {
			if err := fs.Set(name, v); err != nil {
				return nil, fmt.Errorf("%s: %w", variable, err)
			}
		}
	}
	return pos, nil
}

// splitPositional separates the positional arguments from the flags and
// their values, so that the SUBJECT may come before or after the flags
// (Go's flag package stops at the first argument that is no flag).
func splitPositional(fs *flag.FlagSet, args []string) (pos, flags []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(pos, args[i+1:]...), flags
		case len(a) > 1 && a[0] == '-':
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		default:
			pos = append(pos, a)
		}
	}
	return pos, flags
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// checkVersion accepts a version as the registry's paths take it: a
// positive number or latest (and all, for check).
func checkVersion(flagName, v string, allowAll bool) error {
	if v == "latest" || allowAll && v == "all" {
		return nil
	}
	if n, err := strconv.ParseInt(v, 10, 32); err == nil && n >= 1 {
		return nil
	}
	if allowAll {
		return fmt.Errorf("%s %q: want a positive number, latest or all", flagName, v)
	}
	return fmt.Errorf("%s %q: want a positive number or latest", flagName, v)
}

// parseReference reads name=subject:version. The name is up to the first
// '=' (Avro full names and .proto paths have none); the version follows
// the last ':', since subjects may hold colons (":.context:subject").
func parseReference(s string) (sr.SchemaReference, error) {
	name, rest, ok := strings.Cut(s, "=")
	i := strings.LastIndexByte(rest, ':')
	if !ok || name == "" || i <= 0 {
		return sr.SchemaReference{}, fmt.Errorf("reference %q: want name=subject:version", s)
	}
	v, err := strconv.Atoi(rest[i+1:])
	if err != nil || v < 1 {
		return sr.SchemaReference{}, fmt.Errorf("reference %q: the version must be a positive number", s)
	}
	return sr.SchemaReference{Name: name, Subject: rest[:i], Version: v}, nil
}

// call sends one request and answers the registry's body as it came; the
// registry's errors come back as its error_code and message.
func (c *schemaCmd) call(ctx context.Context, method, path string, q url.Values, body any) ([]byte, error) {
	if len(q) > 0 {
		ctx = sr.WithParams(ctx, sr.RawParams(q))
	}
	var raw []byte
	if err := c.cl.Do(ctx, method, path, body, &raw); err != nil {
		return nil, asRegistryError(err)
	}
	return raw, nil
}

// registryError is the registry's error answer, printed as its error_code
// and message when it answered one, and as the HTTP status and body when
// it answered something else (a proxy's page, say).
type registryError struct{ resp *sr.ResponseError }

func (e *registryError) Error() string {
	if r := e.resp; r.ErrorCode != 0 {
		return fmt.Sprintf("error_code %d: %s", r.ErrorCode, r.Message)
	}
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.resp.Method, e.resp.URL, e.resp.StatusCode, e.resp.Raw)
}

func (e *registryError) Unwrap() error { return e.resp }

func asRegistryError(err error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return &registryError{re}
	}
	return err
}

// isErrorCode reports whether err is the registry's answer with one of
// codes.
func isErrorCode(err error, codes ...int) bool {
	var re *sr.ResponseError
	return errors.As(err, &re) && slices.Contains(codes, re.ErrorCode)
}

// emit prints raw as it came with --output json; otherwise decodes it into
// v and prints it with text.
func emit[T any](c *schemaCmd, raw []byte, text func(v T) error) error {
	if c.output == "json" {
		raw = bytes.TrimSpace(raw)
		_, err := fmt.Fprintf(c.out, "%s\n", raw)
		return err
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("the registry's answer: %w", err)
	}
	return text(v)
}

func subjectPath(subject string) string { return "/subjects/" + url.PathEscape(subject) }

func flagQuery(name string, on bool) url.Values {
	if !on {
		return nil
	}
	return url.Values{name: {"true"}}
}

func (c *schemaCmd) list(ctx context.Context) error {
	path, q := "/subjects", flagQuery("deleted", c.deleted)
	if c.subject != "" {
		if c.prefix != "" {
			return errors.New("list: --prefix lists subjects; with a SUBJECT, its versions are listed")
		}
		path = subjectPath(c.subject) + "/versions"
	} else if c.prefix != "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set("subjectPrefix", c.prefix)
	}
	raw, err := c.call(ctx, http.MethodGet, path, q, nil)
	if err != nil {
		return err
	}
	return emit(c, raw, func(items []json.RawMessage) error {
		for _, it := range items {
			var s string
			if json.Unmarshal(it, &s) != nil {
				s = string(it) // a version number
			}
			fmt.Fprintln(c.out, s)
		}
		return nil
	})
}

func (c *schemaCmd) get(ctx context.Context) error {
	path, q := "", url.Values{}
	if c.id > 0 {
		path = "/schemas/ids/" + strconv.Itoa(c.id)
		if c.subject != "" {
			q.Set("subject", c.subject)
		}
	} else {
		path = subjectPath(c.subject) + "/versions/" + c.version
		if c.deleted {
			q.Set("deleted", "true")
		}
	}
	raw, err := c.call(ctx, http.MethodGet, path, q, nil)
	if err != nil {
		return err
	}
	return emit(c, raw, func(s sr.SubjectSchema) error {
		if s.ID == 0 {
			s.ID = c.id
		}
		return c.printSchema(s)
	})
}

// printSchema prints a schema's place, type and references, a blank line,
// and its text (JSON indented).
func (c *schemaCmd) printSchema(s sr.SubjectSchema) error {
	w := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	if s.Subject != "" {
		fmt.Fprintf(w, "subject\t%s\n", s.Subject)
	}
	if s.Version != 0 {
		fmt.Fprintf(w, "version\t%d\n", s.Version)
	}
	fmt.Fprintf(w, "id\t%d\n", s.ID)
	fmt.Fprintf(w, "type\t%s\n", s.Type)
	for _, r := range s.References {
		fmt.Fprintf(w, "reference\t%s=%s:%d\n", r.Name, r.Subject, r.Version)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	text := s.Schema.Schema
	var b bytes.Buffer
	if s.Type != sr.TypeProtobuf && json.Indent(&b, []byte(text), "", "  ") == nil {
		text = b.String()
	}
	_, err := fmt.Fprintf(c.out, "\n%s\n", strings.TrimRight(text, "\n"))
	return err
}

// readSchema reads --file (- : standard input) into the request body.
func (c *schemaCmd) readSchema() (sr.Schema, error) {
	var text []byte
	var err error
	if c.file == "-" {
		text, err = io.ReadAll(c.in)
	} else {
		text, err = os.ReadFile(c.file)
	}
	if err != nil {
		return sr.Schema{}, fmt.Errorf("--file: %w", err)
	}
	s := sr.Schema{Schema: string(text), References: c.refs}
	if c.typ != "" {
		if err := s.Type.UnmarshalText([]byte(c.typ)); err != nil {
			return sr.Schema{}, err
		}
	}
	return s, nil
}

func (c *schemaCmd) register(ctx context.Context) error {
	s, err := c.readSchema()
	if err != nil {
		return err
	}
	body := sr.SubjectSchema{Schema: s, ID: c.id}
	if c.version != "" {
		body.Version, _ = strconv.Atoi(c.version) // checked in parse
	}
	raw, err := c.call(ctx, http.MethodPost, subjectPath(c.subject)+"/versions", flagQuery("normalize", c.normalize), body)
	if err != nil {
		return err
	}
	return emit(c, raw, func(r sr.SubjectSchema) error {
		if r.Version == 0 { // registries before Confluent 7.6 answer only the id
			fmt.Fprintf(c.out, "registered %s: id %d\n", c.subject, r.ID)
			return nil
		}
		fmt.Fprintf(c.out, "registered %s version %d: id %d\n", c.subject, r.Version, r.ID)
		return nil
	})
}

func (c *schemaCmd) check(ctx context.Context) error {
	s, err := c.readSchema()
	if err != nil {
		return err
	}
	path := "/compatibility" + subjectPath(c.subject) + "/versions"
	if c.version != "all" {
		path += "/" + c.version
	}
	q := url.Values{}
	if c.verbose {
		q.Set("verbose", "true")
	}
	if c.normalize {
		q.Set("normalize", "true")
	}
	raw, err := c.call(ctx, http.MethodPost, path, q, s)
	if err != nil {
		return err
	}
	var res sr.CheckCompatibilityResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("the registry's answer: %w", err)
	}
	if c.output == "json" {
		fmt.Fprintf(c.out, "%s\n", bytes.TrimSpace(raw))
	} else if res.Is {
		fmt.Fprintln(c.out, "compatible")
	} else {
		fmt.Fprintln(c.out, "incompatible")
		for _, m := range res.Messages {
			fmt.Fprintf(c.out, "  %s\n", m)
		}
	}
	if !res.Is {
		return errIncompatible
	}
	return nil
}

func (c *schemaCmd) delete(ctx context.Context) error {
	path, what := subjectPath(c.subject), c.subject
	if c.version != "" {
		path, what = path+"/versions/"+c.version, c.subject+" version "+c.version
	}
	var raw []byte
	var err error
	if c.permanent {
		// Confluent's two steps: a permanent delete is refused (40405,
		// 40407) until a soft one; one done before is no reason to stop
		// (40404, 40406).
		_, err = c.call(ctx, http.MethodDelete, path, nil, nil)
		if err == nil || isErrorCode(err, 40404, 40406) {
			raw, err = c.call(ctx, http.MethodDelete, path, url.Values{"permanent": {"true"}}, nil)
		}
	} else {
		raw, err = c.call(ctx, http.MethodDelete, path, nil, nil)
	}
	if err != nil {
		return err
	}
	how := "deleted"
	if c.permanent {
		how = "permanently deleted"
	}
	if c.version != "" {
		return emit(c, raw, func(v int) error {
			_, err := fmt.Fprintf(c.out, "%s %s version %d\n", how, c.subject, v)
			return err
		})
	}
	return emit(c, raw, func(vs []int) error {
		s := make([]string, len(vs))
		for i, v := range vs {
			s[i] = strconv.Itoa(v)
		}
		_, err := fmt.Fprintf(c.out, "%s %s: versions %s\n", how, what, strings.Join(s, ", "))
		return err
	})
}

// settingsPath is /config or /mode, of the registry or of a subject.
func (c *schemaCmd) settingsPath(root string) string {
	if c.subject == "" {
		return root
	}
	return root + "/" + url.PathEscape(c.subject)
}

// whose names whose settings a line is about.
func (c *schemaCmd) whose() string {
	if c.subject == "" {
		return "the registry"
	}
	return c.subject
}

func (c *schemaCmd) config(ctx context.Context) error {
	path := c.settingsPath("/config")
	switch {
	case c.set != "":
		raw, err := c.call(ctx, http.MethodPut, path, nil, map[string]string{"compatibility": c.set})
		if err != nil {
			return err
		}
		return emit(c, raw, func(r struct {
			Compatibility string `json:"compatibility"`
		}) error {
			_, err := fmt.Fprintf(c.out, "%s: %s\n", c.whose(), r.Compatibility)
			return err
		})
	case c.del:
		raw, err := c.call(ctx, http.MethodDelete, path, nil, nil)
		if err != nil {
			return err
		}
		return emit(c, raw, func(r struct {
			Level string `json:"compatibilityLevel"`
		}) error {
			_, err := fmt.Fprintf(c.out, "%s: compatibility level %s dropped\n", c.whose(), r.Level)
			return err
		})
	}
	// A subject without its own level has the registry's: the level its
	// registrations are checked with.
	raw, err := c.call(ctx, http.MethodGet, path, flagQuery("defaultToGlobal", c.subject != ""), nil)
	if err != nil {
		return err
	}
	return emit(c, raw, func(r struct {
		Level     string `json:"compatibilityLevel"`
		Normalize bool   `json:"normalize"`
	}) error {
		norm := ""
		if r.Normalize {
			norm = " (normalize)"
		}
		_, err := fmt.Fprintf(c.out, "%s%s\n", r.Level, norm)
		return err
	})
}

func (c *schemaCmd) mode(ctx context.Context) error {
	path := c.settingsPath("/mode")
	type modeJSON struct {
		Mode string `json:"mode"`
	}
	switch {
	case c.set != "":
		raw, err := c.call(ctx, http.MethodPut, path, flagQuery("force", c.force), modeJSON{c.set})
		if err != nil {
			return err
		}
		return emit(c, raw, func(r modeJSON) error {
			_, err := fmt.Fprintf(c.out, "%s: %s\n", c.whose(), r.Mode)
			return err
		})
	case c.del:
		raw, err := c.call(ctx, http.MethodDelete, path, nil, nil)
		if err != nil {
			return err
		}
		return emit(c, raw, func(r modeJSON) error {
			_, err := fmt.Fprintf(c.out, "%s: mode %s dropped\n", c.whose(), r.Mode)
			return err
		})
	}
	raw, err := c.call(ctx, http.MethodGet, path, flagQuery("defaultToGlobal", c.subject != ""), nil)
	if err != nil {
		return err
	}
	return emit(c, raw, func(r modeJSON) error {
		_, err := fmt.Fprintln(c.out, r.Mode)
		return err
	})
}
