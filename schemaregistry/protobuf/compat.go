package protobuf

import "floe/schemaregistry/format"

func (protobufFormat) Compatible(reader, writer format.Schema) []string { return nil }
