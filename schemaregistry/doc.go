// Package schemaregistry is floe's Confluent-compatible schema registry:
// the REST API of Confluent's Schema Registry (subjects, versions, schemas
// by global id, references, compatibility, config, mode, soft and
// permanent deletes), served by every agent over the metadata store
// (metadata.SchemaStore), and the look-ups the broker's record validation
// needs (Server.SchemaByID, Server.SubjectHasID, Server.LatestSchema).
//
// Where Confluent's behaviour and anything else differ, Confluent's wins:
// status codes, error codes and messages are those of its Errors.java, the
// JSON shapes those of its entities. Clients branch on them.
//
// Rooms:
//   - server.go: Config, New, routing, bodies, content types, errors out.
//   - errors.go: Confluent's error codes and messages.
//   - register.go: register, look-up by schema, compatibility checks.
//   - read.go: the GET endpoints of schemas and subjects.
//   - delete.go: soft and permanent deletes.
//   - settings.go: /config and /mode.
//   - cache.go: parsed schemas by id and subjects' versions, and the
//     exported look-ups.
//   - guid.go: Confluent 8's content guids and GET /schemas/guids.
//   - formats.go: the schema types served.
//
// The schema formats live in subpackages behind format.Format (avro,
// jsonschema, protobuf) and know nothing of HTTP or stores. Every write
// is one metadata transaction (SchemaStore.UpdateSchemas), serialized with
// every other agent's, so ids and versions are never handed out twice.
// The package never talks to object storage or to Kafka clients.
//
// To add an endpoint: a handler in the file of its concern, its pattern in
// Server.routes, Confluent's errors from errors.go, a case in the tests
// with the exact body.
package schemaregistry
