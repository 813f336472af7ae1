package jsonschema

import "floe/schemaregistry/format"

// Compatible is not written yet: it refuses every pair rather than let an
// unchecked schema through.
func (*Format) Compatible(reader, writer format.Schema) []string {
	return []string{"JSON Schema compatibility checking is not implemented yet"}
}
