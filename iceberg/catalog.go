package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"

	// S3 file IO for s3:// warehouses (file:// is built in).
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
)

// CatalogConfig says where floe's catalog lives and where its tables' files go.
type CatalogConfig struct {
	// DB is the metadata database (PostgreSQL, or the SQLite file of floe
	// dev); Dialect is "postgres" or "sqlite". iceberg-go's SQL catalog
	// keeps its two tables there (iceberg_tables,
	// iceberg_namespace_properties), creating them if missing.
	DB      *sql.DB
	Dialect string
	// Namespace holds every topic table (--iceberg-namespace, "floe").
	Namespace string
	// Warehouse is the URL under which tables are located, inside floe's
	// bucket: s3://BUCKET/PREFIX/iceberg or file:///DIR/iceberg.
	Warehouse string
	// IO configures iceberg-go's file IO for writing and reading the
	// tables (s3.endpoint, s3.region, s3.access-key-id, …).
	IO iceberg.Properties
	// ReaderConfig is what the REST catalog's load results hand engines in
	// "config": the endpoint, region and addressing style of the bucket,
	// and credentials only when the operator chose to vend them.
	ReaderConfig map[string]string
}

// Catalog is floe's Iceberg catalog: iceberg-go's SQL catalog in the
// metadata database, one namespace of topic tables. Tables are written
// only by the Converter; the REST handler serves them read-only.
type Catalog struct {
	cat       *sqlcat.Catalog
	ns        table.Identifier
	warehouse string
	reader    map[string]string
}

// catalogName is the catalog_name of floe's rows in iceberg_tables.
const catalogName = "floe"

// OpenCatalog opens the catalog and makes sure its namespace exists.
func OpenCatalog(ctx context.Context, cfg CatalogConfig) (*Catalog, error) {
	if cfg.Namespace == "" || strings.ContainsAny(cfg.Namespace, ".\x1f") {
		return nil, fmt.Errorf("iceberg namespace %q: must be one non-empty level without dots", cfg.Namespace)
	}
	if cfg.Warehouse == "" {
		return nil, errors.New("iceberg warehouse location is empty")
	}
	props := iceberg.Properties{}
	for k, v := range cfg.IO {
		props[k] = v
	}
	props["warehouse"] = cfg.Warehouse
	var cat *sqlcat.Catalog
	var err error
	// Agents and compactors starting together race to create the
	// catalog's tables; CREATE TABLE IF NOT EXISTS can still fail the
	// loser on PostgreSQL, and a retry then finds them.
	for attempt := 0; attempt < 5; attempt++ {
		if cat, err = sqlcat.NewCatalog(catalogName, cfg.DB, sqlcat.SupportedDialect(cfg.Dialect), props); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, fmt.Errorf("iceberg catalog: %w", err)
	}
	c := &Catalog{cat: cat, ns: table.Identifier{cfg.Namespace}, warehouse: strings.TrimSuffix(cfg.Warehouse, "/"), reader: cfg.ReaderConfig}
	if err := c.ensureNamespace(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Catalog) ensureNamespace(ctx context.Context) error {
	ok, err := c.cat.CheckNamespaceExists(ctx, c.ns)
	if err != nil {
		return fmt.Errorf("iceberg namespace %s: %w", c.ns, err)
	}
	if ok {
		return nil
	}
	err = c.cat.CreateNamespace(ctx, c.ns, iceberg.Properties{"comment": "Kafka topics of floe, one table per topic"})
	if err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("iceberg namespace %s: %w", c.ns, err)
	}
	return nil
}

// Namespace returns the namespace of topic tables.
func (c *Catalog) Namespace() table.Identifier { return c.ns }

// ident is the identifier of a topic's table.
func (c *Catalog) ident(topic string) table.Identifier { return c.identOf(TableName(topic)) }

// identOf is the identifier of the table named name in the namespace.
func (c *Catalog) identOf(name string) table.Identifier {
	return append(table.Identifier{}, append(c.ns, name)...)
}

// Load loads a topic's table; catalog.ErrNoSuchTable if it has none.
func (c *Catalog) Load(ctx context.Context, topic string) (*table.Table, error) {
	return c.cat.LoadTable(ctx, c.ident(topic))
}

// loadNamed loads the table named name (a dead-letter table).
func (c *Catalog) loadNamed(ctx context.Context, name string) (*table.Table, error) {
	return c.cat.LoadTable(ctx, c.identOf(name))
}

// createNamed creates the table named name with the given schema, spec
// and properties.
func (c *Catalog) createNamed(ctx context.Context, name string, sc *iceberg.Schema, spec iceberg.PartitionSpec, props iceberg.Properties) (*table.Table, error) {
	loc := c.warehouse + "/" + c.ns[0] + "/" + name
	return c.cat.CreateTable(ctx, c.identOf(name), sc,
		catalog.WithPartitionSpec(&spec), catalog.WithLocation(loc), catalog.WithProperties(props))
}

// Close releases the catalog; the database handle stays the caller's.
func (c *Catalog) Close() error { return c.cat.Close() }
