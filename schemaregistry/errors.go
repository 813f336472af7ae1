package schemaregistry

import (
	"fmt"
	"net/http"
)

// apiError is an answer other than success: the HTTP status and
// Confluent's body {"error_code":…,"message":…}. The codes and messages
// are those of Confluent's Errors.java and rest exceptions, word for word,
// since clients (ksqlDB, Connect, the serializers) branch on them.
type apiError struct {
	status  int
	code    int
	message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %d: %s", e.status, e.code, e.message) }

func newErr(status, code int, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func errSubjectNotFound(subject string) *apiError {
	return newErr(http.StatusNotFound, 40401, "Subject '%s' not found.", subject)
}

func errVersionNotFound(version int) *apiError {
	return newErr(http.StatusNotFound, 40402, "Version %d not found.", version)
}

func errSchemaNotFound() *apiError {
	return newErr(http.StatusNotFound, 40403, "Schema not found")
}

func errSchemaIDNotFound(id int) *apiError {
	return newErr(http.StatusNotFound, 40403, "Schema %d not found", id)
}

func errSubjectSoftDeleted(subject string) *apiError {
	return newErr(http.StatusNotFound, 40404, "Subject '%s' was soft deleted.Set permanent=true to delete permanently", subject)
}

func errSubjectNotSoftDeleted(subject string) *apiError {
	return newErr(http.StatusNotFound, 40405, "Subject '%s' was not deleted first before being permanently deleted", subject)
}

func errVersionSoftDeleted(subject string, version int) *apiError {
	return newErr(http.StatusNotFound, 40406, "Subject '%s' Version %d was soft deleted.Set permanent=true to delete permanently", subject, version)
}

func errVersionNotSoftDeleted(subject string, version int) *apiError {
	return newErr(http.StatusNotFound, 40407, "Subject '%s' Version %d was not deleted first before being permanently deleted", subject, version)
}

func errNoSubjectConfig(subject string) *apiError {
	return newErr(http.StatusNotFound, 40408, "Subject '%s' does not have subject-level compatibility configured", subject)
}

func errNoSubjectMode(subject string) *apiError {
	return newErr(http.StatusNotFound, 40409, "Subject '%s' does not have subject-level mode configured", subject)
}

func errIncompatible(subject string, details []string) *apiError {
	return newErr(http.StatusConflict, 40901, "Schema being registered is incompatible with an earlier schema for subject \"%s\", details: %s",
		subject, javaList(details))
}

func errInvalidSchema(message string) *apiError {
	return newErr(http.StatusUnprocessableEntity, 42201, "%s", message)
}

func errInvalidVersion(version string) *apiError {
	return newErr(http.StatusUnprocessableEntity, 42202,
		"The specified version '%s' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\"", version)
}

func errInvalidCompatibility() *apiError {
	return newErr(http.StatusUnprocessableEntity, 42203,
		"Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive")
}

func errInvalidMode() *apiError {
	return newErr(http.StatusUnprocessableEntity, 42204, "Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD.")
}

func errNotPermitted(format string, args ...any) *apiError {
	return newErr(http.StatusUnprocessableEntity, 42205, format, args...)
}

func errReferenceExists(subject string, version int) *apiError {
	return newErr(http.StatusUnprocessableEntity, 42206,
		"One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=%s,version=%d}.", subject, version)
}

func errInvalidSubject(subject string) *apiError {
	return newErr(http.StatusUnprocessableEntity, 42208, "The specified subject '%s' is not a valid.", subject)
}

func errSchemaTooLarge() *apiError {
	return newErr(http.StatusUnprocessableEntity, 42209, "Register operation failed because schema is too large")
}

// errStore is a failure of the metadata store: 50001, with Confluent's
// message for the operation; the cause goes to the log, not the client.
func errStore(message string) *apiError {
	return newErr(http.StatusInternalServerError, 50001, "%s", message)
}

func errTimeout(message string) *apiError {
	return newErr(http.StatusInternalServerError, 50002, "%s", message)
}

// HTTP-level errors, as Confluent's Jersey answers them.
func errHTTP(status int) *apiError {
	return newErr(status, status, "HTTP %d %s", status, http.StatusText(status))
}

// javaList formats a list as Java's List.toString does: [a, b].
func javaList(items []string) string {
	s := "["
	for i, it := range items {
		if i > 0 {
			s += ", "
		}
		s += it
	}
	return s + "]"
}
