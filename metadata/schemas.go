package metadata

import "context"

// The schema registry's state (package schemaregistry): schemas by id,
// the versions of each subject, and the compatibility and mode settings of
// the registry and of single subjects. metadata stores rows; what a schema
// means, whether two are compatible and what Confluent's API answers are the
// registry's business.
//
// A schema's id is global and never reused: the store allocates ids from
// one counter that only grows (NextSchemaID), also past ids given on
// import. Every write goes through UpdateSchemas, whose transactions run
// one after the other (on PostgreSQL they queue on one row lock), so that
// the registry's read-decide-write steps (the next version of a subject,
// the compatibility check against the versions before it) see what the
// previous write left, whichever agent made it.

// SchemaReference is one reference of a registered schema: the name the
// schema uses for it and the subject version it resolves to.
type SchemaReference struct {
	Name    string
	Subject string
	Version int
}

// RegisteredSchema is one schema by id. Its content never changes once
// stored; a hard delete of the last version using it leaves the row (ids
// are never reused, and a reader of old records still finds it).
type RegisteredSchema struct {
	ID         int
	Type       string // schemaType: AVRO, JSON, PROTOBUF
	Schema     string // the text as registered (the format's canonical or normalized form)
	References []SchemaReference
	// Metadata and RuleSet are the register request's JSON objects as
	// given ("" when absent).
	Metadata string
	RuleSet  string
	// Fingerprint identifies the content (type, text, references,
	// metadata and rule set): the registry gives the same schema
	// registered again under any subject the id it already has.
	Fingerprint string
}

// SubjectVersion is one version of a subject. A soft-deleted version keeps
// its number and its row; a hard delete removes the row.
type SubjectVersion struct {
	Subject  string
	Version  int
	SchemaID int
	Deleted  bool
}

// SchemaConfig is the registry's or a subject's configuration.
type SchemaConfig struct {
	Compatibility string // one of Confluent's seven levels
	Normalize     bool
}

// SchemaReader reads the registry's state.
type SchemaReader interface {
	// SchemaByID returns a schema by id; ErrNotFound if there is none.
	SchemaByID(ctx context.Context, id int) (RegisteredSchema, error)
	// SchemaIDByFingerprint returns the lowest id of a schema with that
	// fingerprint; ErrNotFound if none.
	SchemaIDByFingerprint(ctx context.Context, fingerprint string) (int, error)
	// MaxSchemaID returns the largest id stored (0 if none).
	MaxSchemaID(ctx context.Context) (int, error)
	// SubjectVersions returns the versions of subject in version order,
	// soft-deleted ones included (the caller filters).
	SubjectVersions(ctx context.Context, subject string) ([]SubjectVersion, error)
	// AllSubjectVersions returns the versions of every subject that
	// starts with prefix, soft-deleted included, sorted by subject
	// (bytewise) and version.
	AllSubjectVersions(ctx context.Context, prefix string) ([]SubjectVersion, error)
	// VersionsOfSchema returns the subject versions that use schema id,
	// soft-deleted included, sorted by subject and version.
	VersionsOfSchema(ctx context.Context, id int) ([]SubjectVersion, error)
	// ReferencedBy returns the ids of the schemas that reference the
	// subject version, sorted, each once, of those used by at least one
	// subject version (soft-deleted included).
	ReferencedBy(ctx context.Context, subject string, version int) ([]int, error)
	// SchemaConfig returns the configuration of subject ("" for the
	// registry's own); ErrNotFound if none is set.
	SchemaConfig(ctx context.Context, subject string) (SchemaConfig, error)
	// SchemaMode returns the mode of subject ("" for the registry's
	// own); ErrNotFound if none is set.
	SchemaMode(ctx context.Context, subject string) (string, error)
}

// SchemaWriter is a SchemaReader inside one write transaction, with the
// writes.
type SchemaWriter interface {
	SchemaReader
	// NextSchemaID allocates an id larger than every id allocated or
	// stored before.
	NextSchemaID(ctx context.Context) (int, error)
	// PutSchema stores a schema under its id; a schema already stored
	// under that id is left as it is.
	PutSchema(ctx context.Context, s RegisteredSchema) error
	// PutSubjectVersion stores a subject version, or changes its schema
	// id and deleted flag if it exists.
	PutSubjectVersion(ctx context.Context, v SubjectVersion) error
	// DeleteSubjectVersion removes a subject version (a hard delete);
	// ErrNotFound if there is none.
	DeleteSubjectVersion(ctx context.Context, subject string, version int) error
	// SetSchemaConfig and SetSchemaMode set, and DeleteSchemaConfig and
	// DeleteSchemaMode remove, the setting of subject ("" for the
	// registry's). Deleting an unset setting is no error.
	SetSchemaConfig(ctx context.Context, subject string, c SchemaConfig) error
	DeleteSchemaConfig(ctx context.Context, subject string) error
	SetSchemaMode(ctx context.Context, subject, mode string) error
	DeleteSchemaMode(ctx context.Context, subject string) error
}

// SchemaStore is the part of the Store that holds the schema registry.
type SchemaStore interface {
	// Schemas reads the registry outside any transaction.
	Schemas() SchemaReader
	// UpdateSchemas runs fn in one write transaction, committed if fn
	// returns nil, after every other UpdateSchemas transaction that began
	// before it has ended. An error from fn is returned as it is.
	UpdateSchemas(ctx context.Context, fn func(w SchemaWriter) error) error
}
