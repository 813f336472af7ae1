package schemaregistry

import (
	"floe/schemaregistry/avro"
	"floe/schemaregistry/format"
	"floe/schemaregistry/jsonschema"
	"floe/schemaregistry/protobuf"
)

// DefaultFormats returns the three formats floe serves, keyed by
// schemaType.
func DefaultFormats() map[string]format.Format {
	fs := map[string]format.Format{}
	for _, f := range []format.Format{avro.New(), jsonschema.New(), protobuf.New()} {
		fs[f.Type()] = f
	}
	return fs
}
