// Package format is the contract between the schema registry and the three
// schema formats it serves (Avro, JSON Schema, Protobuf): how a schema's text
// is parsed with the schemas it references, the forms it is compared and
// stored in, whether one schema can read what another wrote (Confluent's
// compatibility rules), and whether a payload is a value of a schema
// (broker-side validation). Each format lives in a subpackage of its own
// (avro, jsonschema, protobuf) and knows nothing of HTTP, subjects or stores.
package format

import "errors"

// Type names, as Confluent's API spells them in schemaType.
const (
	Avro     = "AVRO"
	JSON     = "JSON"
	Protobuf = "PROTOBUF"
)

// Reference is a schema that another schema refers to, resolved by the
// registry before Parse is called.
type Reference struct {
	// Name is how the referring schema names it: an Avro full name
	// (com.example.Address), a Protobuf import path (other.proto) or a JSON
	// Schema $ref URI.
	Name    string
	Subject string
	Version int
	// Schema is the referenced schema's text, as registered.
	Schema string
	// References are the referenced schema's own references, resolved
	// (a reference may refer to others in turn).
	References []Reference
}

// Schema is a parsed schema.
type Schema interface {
	// Canonical is the form a schema is stored in and compared by when a
	// subject is searched for a schema: two texts with the same Canonical
	// are the same schema. It keeps what Confluent keeps (Avro: the schema
	// as Confluent's parser prints it, which keeps doc and aliases but drops
	// insignificant white space; JSON: the text minified; Protobuf: the text
	// as given).
	Canonical() string
	// Normalized is the form registered and compared with normalize=true
	// (Confluent's normalize: Avro's and Protobuf's normal form, JSON with
	// its keys sorted).
	Normalized() string
	// Validate reports whether payload (the record's bytes after the wire
	// format's magic byte and schema id, and for Protobuf after the message
	// indexes) is a value of this schema. index is Protobuf's message-index
	// path (nil or [0]: the first message of the file); other formats
	// ignore it. The error says why not, for the produce's record error.
	Validate(index []int, payload []byte) error
}

// Format is one schema type.
type Format interface {
	// Type is the schemaType: Avro, JSON or Protobuf.
	Type() string
	// Parse parses a schema's text with its resolved references. A schema
	// that is not valid gets an error whose text is the message Confluent's
	// 42201 answer carries.
	Parse(schema string, refs []Reference) (Schema, error)
	// Compatible reports why data written with writer cannot be read with
	// reader: nil when it can. Each message is one incompatibility, in the
	// words of Confluent's verbose compatibility answer where it has them.
	// BACKWARD is Compatible(new, old), FORWARD Compatible(old, new), FULL
	// both; the registry applies the levels.
	Compatible(reader, writer Schema) []string
}

// ErrUnknownIndex: a Protobuf message-index path names no message of the schema.
var ErrUnknownIndex = errors.New("message index names no message of the schema")
