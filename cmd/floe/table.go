package main

// floe table: the topics' Iceberg tables read through floe's own REST
// catalog with iceberg-go's REST client and its table scan, as any engine
// reads them: the tables, their schemas and snapshots, and their rows as
// JSON lines or an aligned text table (tablerows.go).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	// S3 file IO for tables in s3:// warehouses (file:// is built in).
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
)

func init() {
	commands["table"] = runTable
}

const tableUsage = `Usage:
  floe table list     [--catalog URL] [--namespace NS]
  floe table describe NAME
  floe table scan     NAME [--columns a,b] [--filter EXPR] [--limit N] [--snapshot ID]

The topics' Iceberg tables, read through an agent's Iceberg REST catalog
with iceberg-go's REST client and table scan, as engines read them:

  list      the tables of the namespace: current snapshot, its row count
            (the snapshot summary's total-records) and the schema id
  describe  a table's schema (field ids, types, required), partition spec,
            properties and snapshots
  scan      a table's rows (of the current snapshot, or --snapshot ID):
            --output json prints one JSON object a row, columns in the
            table's order (structs as objects, lists as arrays, maps as
            objects keyed by the key's text, decimals as exact strings,
            timestamps RFC 3339 with microseconds (Z when timestamptz),
            dates 2006-01-02, times 15:04:05.000000, binary base64, uuids
            as text, NaN and infinities as strings); text (the default)
            an aligned table, nested values as compact JSON. --columns
            picks columns (a nested field by its dotted path,
            _kafka.offset); --limit N stops after N rows

NAME is the table's name: the topic's, dots turned into underscores (a
topic's name is taken as such). --filter keeps the rows a small expression
holds for, evaluated by iceberg-go (files pruned by their statistics, then
rows): comparisons COLUMN OP VALUE with OP one of = != < <= > >=, COLUMN is
null, COLUMN is not null, joined by and / or (and binds first; no
parentheses). VALUE is a number, true, false or a 'quoted string' (dates,
times, timestamps, decimals and uuids are written as strings), converted to
the column's type.

Every verb takes --catalog URL (default http://127.0.0.1:8080/iceberg, the
Iceberg REST catalog on an agent's --http-addr; or $FLOE_ICEBERG_CATALOG),
--namespace (default floe, or $FLOE_ICEBERG_NAMESPACE), --output text|json
and --timeout. Where the agent's listeners ask for SASL, so does its
catalog: --user and --password ($FLOE_ICEBERG_USER, $FLOE_ICEBERG_PASSWORD),
a SCRAM user of the cluster, or --bearer-token ($FLOE_ICEBERG_BEARER_TOKEN). With --output json, list prints a JSON array and describe
the table's metadata as the catalog holds it. S3 credentials for reading
data files are the catalog's vended ones or the usual AWS_* variables.
An unknown table prints why and exits 1.

Examples:
  floe table list
  floe table describe orders
  floe table scan orders --filter "amount > 100 and customer.vip = true" --limit 10
  floe table scan orders --columns item,_kafka.offset --output json | jq .item
`

// tableEnv names the environment variables the connection flags fall back
// to; the verbs' own flags come from the command line alone.
var tableEnv = map[string]string{
	"catalog":      "FLOE_ICEBERG_CATALOG",
	"namespace":    "FLOE_ICEBERG_NAMESPACE",
	"user":         "FLOE_ICEBERG_USER",
	"password":     "FLOE_ICEBERG_PASSWORD",
	"bearer-token": "FLOE_ICEBERG_BEARER_TOKEN",
}

// tableCmd is one run of floe table.
type tableCmd struct {
	verb string
	out  io.Writer

	catalogURL, namespace string
	user, password, token string
	output                string
	timeout               time.Duration

	name     string // the positional NAME
	columns  string
	filter   string
	limit    int64
	snapshot int64

	rowFilter iceberg.BooleanExpression // --filter parsed
}

func runTable(args []string) error { return runTableTo(args, os.Stdout, os.Stderr) }

func runTableTo(args []string, out, errOut io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(out, tableUsage)
		return nil
	}
	c := &tableCmd{verb: args[0], out: out}
	fs, err := c.flags(errOut)
	if err != nil {
		fmt.Fprint(errOut, tableUsage)
		return err
	}
	if err := c.parse(fs, args[1:]); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	cat, err := rest.NewCatalog(ctx, "floe", c.catalogURL, c.auth()...)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", c.catalogURL, err)
	}
	defer cat.Close()
	switch c.verb {
	case "list":
		return c.list(ctx, cat)
	case "describe":
		return c.describe(ctx, cat)
	default:
		return c.scan(ctx, cat)
	}
}

// auth is the catalog client's credentials: an agent whose Kafka listeners
// ask for SASL asks them of its HTTP endpoints too, HTTP Basic with a
// SCRAM user or a Bearer OAUTHBEARER token.
func (c *tableCmd) auth() []rest.Option {
	switch {
	case c.token != "":
		return []rest.Option{rest.WithOAuthToken(c.token)}
	case c.user != "" || c.password != "":
		basic := base64.StdEncoding.EncodeToString([]byte(c.user + ":" + c.password))
		return []rest.Option{rest.WithHeaders(map[string]string{"Authorization": "Basic " + basic})}
	}
	return nil
}

func (c *tableCmd) flags(errOut io.Writer) (*flag.FlagSet, error) {
	fs := flag.NewFlagSet("floe table "+c.verb, flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprintf(errOut, "Usage: floe table %s\n\n'floe table --help' tells more. Flags:\n", c.verb)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.catalogURL, "catalog", "http://127.0.0.1:8080/iceberg", "the Iceberg REST catalog's `URL` ($FLOE_ICEBERG_CATALOG)")
	fs.StringVar(&c.namespace, "namespace", "floe", "the tables' `namespace` ($FLOE_ICEBERG_NAMESPACE)")
	fs.StringVar(&c.user, "user", "", "Basic auth `user`, a SCRAM user of the cluster ($FLOE_ICEBERG_USER)")
	fs.StringVar(&c.password, "password", "", "Basic auth password (better given as $FLOE_ICEBERG_PASSWORD)")
	fs.StringVar(&c.token, "bearer-token", "", "Bearer `token`, an OAUTHBEARER JWT ($FLOE_ICEBERG_BEARER_TOKEN)")
	fs.StringVar(&c.output, "output", "text", "`format` of the output: text or json")
	fs.StringVar(&c.output, "o", "text", "short for --output")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "bound on the whole command")
	switch c.verb {
	case "list", "describe":
	case "scan":
		fs.StringVar(&c.columns, "columns", "", "only these `columns`, comma-separated (nested fields by dotted path)")
		fs.StringVar(&c.filter, "filter", "", "only the rows this `expression` holds for (see floe table --help)")
		fs.Int64Var(&c.limit, "limit", -1, "at most `n` rows (-1: all)")
		fs.Int64Var(&c.snapshot, "snapshot", 0, "read this snapshot `id` (default: the current one)")
	default:
		return nil, fmt.Errorf("table: unknown verb %q: want list, describe or scan", c.verb)
	}
	return fs, nil
}

// parse parses args, flags and NAME in any order, fills the connection
// flags not given from the environment, and checks what the verb needs.
func (c *tableCmd) parse(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args, tableEnv)
	if err != nil {
		return err
	}
	switch {
	case c.output != "text" && c.output != "json":
		return fmt.Errorf("--output %q: want text or json", c.output)
	case c.timeout <= 0:
		return errors.New("--timeout must be positive")
	case c.namespace == "":
		return errors.New("--namespace must not be empty")
	case c.limit < -1:
		return fmt.Errorf("--limit %d: want a count, or -1 for all", c.limit)
	case c.snapshot < 0:
		return fmt.Errorf("--snapshot %d: want a snapshot id", c.snapshot)
	}
	if c.verb == "list" {
		if len(pos) > 0 {
			return fmt.Errorf("unexpected arguments: %s", strings.Join(pos, " "))
		}
		return nil
	}
	switch {
	case len(pos) == 0 || pos[0] == "":
		return fmt.Errorf("%s: name a table", c.verb)
	case len(pos) > 1:
		return fmt.Errorf("unexpected arguments: %s", strings.Join(pos[1:], " "))
	}
	// A table is named after its topic, dots turned into underscores
	// (iceberg.TableName): a topic's name finds its table.
	c.name = strings.ReplaceAll(pos[0], ".", "_")
	if c.filter != "" {
		e, err := parseFilter(c.filter)
		if err != nil {
			return fmt.Errorf("--filter: %w", err)
		}
		c.rowFilter = e
	}
	return nil
}

// load loads the named table; an unknown one is an error that says so.
func (c *tableCmd) load(ctx context.Context, cat *rest.Catalog, name string) (*table.Table, error) {
	tbl, err := cat.LoadTable(ctx, table.Identifier{c.namespace, name})
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, fmt.Errorf("no table %q in namespace %q of %s (floe table list names them)", name, c.namespace, c.catalogURL)
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	return tbl, nil
}

// tableSummary is one table of list.
type tableSummary struct {
	Name       string `json:"name"`
	SnapshotID *int64 `json:"snapshot_id"` // null: no snapshot yet
	Rows       *int64 `json:"rows"`        // the summary's total-records
	SchemaID   int    `json:"schema_id"`
}

func (c *tableCmd) list(ctx context.Context, cat *rest.Catalog) error {
	var names []string
	for id, err := range cat.ListTables(ctx, table.Identifier{c.namespace}) {
		if errors.Is(err, catalog.ErrNoSuchNamespace) {
			return fmt.Errorf("no namespace %q in %s", c.namespace, c.catalogURL)
		}
		if err != nil {
			return fmt.Errorf("list tables: %w", err)
		}
		names = append(names, id[len(id)-1])
	}
	slices.Sort(names)
	list := []tableSummary{}
	for _, name := range names {
		tbl, err := c.load(ctx, cat, name)
		if err != nil {
			return err
		}
		s := tableSummary{Name: name, SchemaID: tbl.Schema().ID}
		if snap := tbl.CurrentSnapshot(); snap != nil {
			s.SnapshotID = &snap.SnapshotID
			s.Rows = totalRecords(snap)
		}
		list = append(list, s)
	}
	if c.output == "json" {
		return writeJSON(c.out, list)
	}
	w := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TABLE\tSNAPSHOT\tROWS\tSCHEMA")
	for _, s := range list {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", s.Name, optInt(s.SnapshotID), optInt(s.Rows), s.SchemaID)
	}
	return w.Flush()
}

// totalRecords is the snapshot summary's total-records, nil when absent.
func totalRecords(s *table.Snapshot) *int64 {
	if s.Summary == nil {
		return nil
	}
	n, err := strconv.ParseInt(s.Summary.Properties["total-records"], 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

func optInt(n *int64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatInt(*n, 10)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func (c *tableCmd) describe(ctx context.Context, cat *rest.Catalog) error {
	tbl, err := c.load(ctx, cat, c.name)
	if err != nil {
		return err
	}
	md := tbl.Metadata()
	if c.output == "json" {
		return writeJSON(c.out, md)
	}
	sc := tbl.Schema()
	w := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "table\t%s.%s\n", c.namespace, c.name)
	fmt.Fprintf(w, "location\t%s\n", md.Location())
	fmt.Fprintf(w, "format version\t%d\n", md.Version())
	fmt.Fprintf(w, "uuid\t%s\n", md.TableUUID())
	snap := tbl.CurrentSnapshot()
	if snap != nil {
		fmt.Fprintf(w, "current snapshot\t%d\n", snap.SnapshotID)
	} else {
		fmt.Fprintln(w, "current snapshot\t-")
	}
	fmt.Fprintf(w, "\nschema %d\n", sc.ID)
	fmt.Fprintln(w, "ID\tFIELD\tTYPE\tREQUIRED")
	var fields func(prefix string, fs []iceberg.NestedField)
	fields = func(prefix string, fs []iceberg.NestedField) {
		for _, f := range fs {
			name := prefix + f.Name
			fmt.Fprintf(w, "%d\t%s\t%s\t%v\n", f.ID, name, typeName(f.Type), f.Required)
			if n, ok := f.Type.(iceberg.NestedType); ok {
				fields(name+".", n.Fields())
			}
		}
	}
	fields("", sc.Fields())
	spec := tbl.Spec()
	fmt.Fprintf(w, "\npartition spec %d\n", spec.ID())
	if spec.IsUnpartitioned() {
		fmt.Fprintln(w, "(unpartitioned)")
	} else {
		fmt.Fprintln(w, "ID\tFIELD\tTRANSFORM")
		for _, pf := range spec.Fields() {
			src, _ := sc.FindColumnName(pf.SourceID())
			fmt.Fprintf(w, "%d\t%s\t%s(%s)\n", pf.FieldID, pf.Name, pf.Transform, src)
		}
	}
	fmt.Fprintln(w, "\nproperties")
	props := md.Properties()
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range props {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(w, "%s\t%s\n", k, props[k])
	}
	fmt.Fprintln(w, "\nsnapshots")
	fmt.Fprintln(w, "ID\tPARENT\tTIME\tOPERATION\tADDED ROWS\tROWS\tSCHEMA")
	for _, s := range md.Snapshots() {
		op, added := "-", "-"
		if s.Summary != nil {
			op = string(s.Summary.Operation)
			if a, ok := s.Summary.Properties["added-records"]; ok {
				added = a
			}
		}
		schema := "-"
		if s.SchemaID != nil {
			schema = strconv.Itoa(*s.SchemaID)
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.SnapshotID, optInt(s.ParentSnapshotID),
			time.UnixMilli(s.TimestampMs).UTC().Format("2006-01-02T15:04:05.000Z07:00"), op, added, optInt(totalRecords(&s)), schema)
	}
	return w.Flush()
}

// typeName is a field's type in describe: primitives as Iceberg spells
// them, nested types by their kind (their fields follow on lines of
// their own).
func typeName(t iceberg.Type) string {
	switch t.(type) {
	case *iceberg.StructType:
		return "struct"
	case *iceberg.ListType:
		return "list"
	case *iceberg.MapType:
		return "map"
	}
	return t.String()
}

func (c *tableCmd) scan(ctx context.Context, cat *rest.Catalog) error {
	tbl, err := c.load(ctx, cat, c.name)
	if err != nil {
		return err
	}
	opts := []table.ScanOption{table.WithLimit(c.limit)}
	if c.columns != "" {
		opts = append(opts, table.WithSelectedFields(splitComma(c.columns)...))
	}
	if c.rowFilter != nil {
		opts = append(opts, table.WithRowFilter(c.rowFilter))
	}
	if c.snapshot != 0 {
		if tbl.SnapshotByID(c.snapshot) == nil {
			return fmt.Errorf("table %s has no snapshot %d (floe table describe %s lists them)", c.name, c.snapshot, c.name)
		}
		opts = append(opts, table.WithSnapshotID(c.snapshot))
	}
	if c.limit == 0 {
		return nil
	}
	schema, records, err := tbl.Scan(opts...).ToArrowRecords(ctx)
	if err != nil {
		return fmt.Errorf("scan %s: %w", c.name, err)
	}
	rw := newRowWriter(c.out, schema, c.output == "json")
	for rec, err := range records {
		if err != nil {
			return fmt.Errorf("scan %s: %w", c.name, err)
		}
		err = rw.write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return rw.flush()
}
