package schemaregistry_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Exact answers of the raw API, bodies and status codes, for the flows
// and the bad input clients send.

const (
	recV1 = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
	recV2 = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"string","default":"x"}]}`
	recV3 = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"c","type":"string"}]}`
)

func body(schema string) string {
	b, _ := json.Marshal(map[string]string{"schema": schema})
	return string(b)
}

func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestHTTPFlow(t *testing.T) {
	ts := newTestServer(t, openSQLite(t))
	ts.expect(t, "GET", "/", "", 200, `{}`)
	ts.expect(t, "GET", "/schemas/types", "", 200, `["JSON","PROTOBUF","AVRO"]`)
	ts.expect(t, "GET", "/contexts", "", 200, `["."]`)
	ts.expect(t, "GET", "/subjects", "", 200, `[]`)
	ts.expect(t, "GET", "/schemas", "", 200, `[]`)

	// A primitive comes back as "string", never {"type":"string"}.
	ts.expect(t, "POST", "/subjects/p/versions", `{"schema":"{\"type\": \"string\"}"}`, 200,
		`{"version":1,"id":1,"schemaType":"AVRO","schema":"\"string\""}`)
	ts.expect(t, "GET", "/schemas/ids/1", "", 200, `{"schemaType":"AVRO","schema":"\"string\""}`)
	ts.expect(t, "GET", "/schemas/ids/1/schema", "", 200, `"string"`)
	ts.expect(t, "GET", "/schemas/ids/1?fetchMaxId=true", "", 200, `{"schemaType":"AVRO","schema":"\"string\"","maxId":1}`)

	ts.expect(t, "POST", "/subjects/s/versions", body(recV1), 200,
		`{"version":1,"id":2,"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	// Again: the same version, no new id.
	ts.expect(t, "POST", "/subjects/s/versions", body(recV1), 200,
		`{"version":1,"id":2,"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	ts.expect(t, "POST", "/subjects/s/versions", body(recV2), 200,
		`{"version":2,"id":3,"schemaType":"AVRO","schema":`+q(recV2)+`}`)
	// The same schema under another subject keeps its id.
	ts.expect(t, "POST", "/subjects/other/versions", body(recV1), 200,
		`{"version":1,"id":2,"schemaType":"AVRO","schema":`+q(recV1)+`}`)

	// A field without a default breaks BACKWARD.
	missingC := `{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'c' at path '/fields/1' in the new schema has no default value and is missing in the old schema', additionalInfo:'c'}`
	ts.expect(t, "POST", "/subjects/s/versions", body(recV3), 409,
		`{"error_code":40901,"message":"Schema being registered is incompatible with an earlier schema for subject \"s\", details: [`+
			missingC+`, {oldSchemaVersion: 2}, {oldSchema: '`+strings.ReplaceAll(recV2, `"`, `\"`)+`'}, {validateFields: 'false', compatibility: 'BACKWARD'}]"}`)
	ts.expect(t, "POST", "/compatibility/subjects/s/versions/latest?verbose=true", body(recV3), 200,
		`{"is_compatible":false,"messages":[`+q(missingC)+`,"{oldSchemaVersion: 2}",`+q("{oldSchema: '"+recV2+"'}")+`,"{validateFields: 'false', compatibility: 'BACKWARD'}"]}`)
	ts.expect(t, "POST", "/compatibility/subjects/s/versions/latest", body(recV3), 200, `{"is_compatible":false}`)
	ts.expect(t, "POST", "/compatibility/subjects/s/versions?verbose=true", body(recV2), 200, `{"is_compatible":true,"messages":[]}`)
	ts.expect(t, "POST", "/compatibility/subjects/nosuch/versions/latest", body(recV2), 200, `{"is_compatible":true}`)
	ts.expect(t, "POST", "/compatibility/subjects/nosuch/versions/3", body(recV2), 404, `{"error_code":40402,"message":"Version 3 not found."}`)

	// A subject is one path segment, escaped.
	ts.expect(t, "POST", "/subjects/a%2Fb%20c/versions", body(recV1), 200,
		`{"version":1,"id":2,"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	ts.expect(t, "GET", "/subjects/a%2Fb%20c/versions/1", "", 200,
		`{"subject":"a/b c","version":1,"id":2,"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	ts.expect(t, "DELETE", "/subjects/a%2Fb%20c", "", 200, `[1]`)
	ts.expect(t, "DELETE", "/subjects/a%2Fb%20c?permanent=true", "", 200, `[1]`)
	ts.expect(t, "GET", "/subjects", "", 200, `["other","p","s"]`)
	ts.expect(t, "GET", "/subjects?subjectPrefix=o", "", 200, `["other"]`)
	ts.expect(t, "GET", "/subjects?subjectPrefix=:.:o", "", 200, `["other"]`)
	ts.expect(t, "GET", "/subjects?subjectPrefix=:*:", "", 200, `["other","p","s"]`)
	ts.expect(t, "GET", "/subjects?offset=1&limit=1", "", 200, `["p"]`)
	ts.expect(t, "GET", "/subjects?limit=5000", "", 200, `["other","p","s"]`)
	ts.expect(t, "GET", "/subjects/s/versions", "", 200, `[1,2]`)
	ts.expect(t, "GET", "/subjects/:.:s/versions", "", 200, `[1,2]`)
	ts.expect(t, "GET", "/subjects/s/versions/", "", 200, `[1,2]`)
	ts.expect(t, "GET", "/subjects/s/versions/latest", "", 200,
		`{"subject":"s","version":2,"id":3,"schemaType":"AVRO","schema":`+q(recV2)+`}`)
	ts.expect(t, "GET", "/subjects/s/versions/1/schema", "", 200, recV1)
	ts.expect(t, "GET", "/schemas/ids/2/subjects", "", 200, `["other","s"]`)
	ts.expect(t, "GET", "/schemas/ids/2?subject=s", "", 200, `{"subject":"s","version":1,"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	ts.expect(t, "GET", "/schemas/ids/2?subject=p", "", 200, `{"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	// Confluent 8's guids: the content's, whatever its id.
	_, byID := ts.do(t, "GET", "/schemas/ids/2", "", "")
	var withGUID struct{ GUID string }
	if err := json.Unmarshal([]byte(byID), &withGUID); err != nil || withGUID.GUID == "" {
		t.Fatalf("no guid in %s", byID)
	}
	ts.expect(t, "GET", "/schemas/guids/"+withGUID.GUID, "", 200, `{"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	ts.expect(t, "GET", "/schemas/guids/"+withGUID.GUID+"/ids", "", 200, `[{"context":".","id":2}]`)
	ts.expect(t, "GET", "/schemas/guids/00000000-0000-0000-0000-000000000000", "", 404,
		`{"error_code":40403,"message":"Schema 00000000-0000-0000-0000-000000000000 not found"}`)
	ts.expect(t, "GET", "/schemas/ids/2/versions", "", 200, `[{"subject":"other","version":1},{"subject":"s","version":1}]`)
	ts.expect(t, "GET", "/schemas?subjectPrefix=s&latestOnly=true", "", 200,
		`[{"subject":"s","version":2,"id":3,"schemaType":"AVRO","schema":`+q(recV2)+`}]`)
	ts.expect(t, "GET", "/schemas?offset=1&limit=1", "", 200,
		`[{"subject":"p","version":1,"id":1,"schemaType":"AVRO","schema":"\"string\""}]`)
	ts.expect(t, "GET", "/schemas?limit=99999999&offset=99", "", 200, `[]`)
	ts.expect(t, "POST", "/subjects/s", body(` {"type":"record","name":"R","fields":[{"name":"a","type":"int"}]} `), 200,
		`{"subject":"s","version":1,"id":2,"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	ts.expect(t, "POST", "/subjects/s", body(recV3), 404, `{"error_code":40403,"message":"Schema not found"}`)
	ts.expect(t, "POST", "/subjects/nosuch", body(recV3), 404, `{"error_code":40401,"message":"Subject 'nosuch' not found."}`)

	// Config: the registry's and a subject's.
	ts.expect(t, "GET", "/config", "", 200, `{"compatibilityLevel":"BACKWARD"}`)
	ts.expect(t, "GET", "/config/s", "", 404, `{"error_code":40408,"message":"Subject 's' does not have subject-level compatibility configured"}`)
	ts.expect(t, "GET", "/config/s?defaultToGlobal=true", "", 200, `{"compatibilityLevel":"BACKWARD"}`)
	ts.expect(t, "PUT", "/config/s", `{"compatibility":"none"}`, 200, `{"compatibility":"NONE"}`)
	ts.expect(t, "GET", "/config/s", "", 200, `{"compatibilityLevel":"NONE"}`)
	ts.expect(t, "PUT", "/config", `{"compatibility":"FULL_TRANSITIVE"}`, 200, `{"compatibility":"FULL_TRANSITIVE"}`)
	ts.expect(t, "PUT", "/config", `{"compatibility":"SIDEWAYS"}`, 422,
		`{"error_code":42203,"message":"Invalid compatibility level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, and full_transitive"}`)
	ts.expect(t, "POST", "/subjects/s/versions", body(recV3), 200,
		`{"version":3,"id":4,"schemaType":"AVRO","schema":`+q(recV3)+`}`)
	ts.expect(t, "DELETE", "/config/s", "", 200, `{"compatibilityLevel":"NONE"}`)
	ts.expect(t, "DELETE", "/config/s", "", 404, `{"error_code":40401,"message":"Subject 's' not found."}`)
	ts.expect(t, "DELETE", "/config", "", 200, `{"compatibilityLevel":"FULL_TRANSITIVE"}`)
	ts.expect(t, "GET", "/config", "", 200, `{"compatibilityLevel":"BACKWARD"}`)

	// Deletes: soft, then permanent; never permanent first.
	ts.expect(t, "DELETE", "/subjects/s/versions/1?permanent=true", "", 404,
		`{"error_code":40407,"message":"Subject 's' Version 1 was not deleted first before being permanently deleted"}`)
	ts.expect(t, "DELETE", "/subjects/s/versions/1", "", 200, `1`)
	ts.expect(t, "DELETE", "/subjects/s/versions/1", "", 404,
		`{"error_code":40406,"message":"Subject 's' Version 1 was soft deleted.Set permanent=true to delete permanently"}`)
	ts.expect(t, "GET", "/subjects/s/versions", "", 200, `[2,3]`)
	ts.expect(t, "GET", "/subjects/s/versions?deleted=true", "", 200, `[1,2,3]`)
	ts.expect(t, "GET", "/subjects/s/versions/1", "", 404, `{"error_code":40402,"message":"Version 1 not found."}`)
	ts.expect(t, "GET", "/subjects/s/versions/1?deleted=true", "", 200,
		`{"subject":"s","version":1,"id":2,"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	ts.expect(t, "DELETE", "/subjects/s/versions/1?permanent=true", "", 200, `1`)
	ts.expect(t, "GET", "/subjects/s/versions?deleted=true", "", 200, `[2,3]`)
	// The id still resolves: other uses it, and ids are never dropped.
	ts.expect(t, "GET", "/schemas/ids/2", "", 200, `{"schemaType":"AVRO","schema":`+q(recV1)+`}`)

	ts.expect(t, "DELETE", "/subjects/s?permanent=true", "", 404,
		`{"error_code":40405,"message":"Subject 's' was not deleted first before being permanently deleted"}`)
	ts.expect(t, "DELETE", "/subjects/s", "", 200, `[2,3]`)
	ts.expect(t, "DELETE", "/subjects/s", "", 404,
		`{"error_code":40404,"message":"Subject 's' was soft deleted.Set permanent=true to delete permanently"}`)
	ts.expect(t, "GET", "/subjects", "", 200, `["other","p"]`)
	ts.expect(t, "GET", "/subjects?deleted=true", "", 200, `["other","p","s"]`)
	ts.expect(t, "GET", "/subjects?deletedOnly=true", "", 200, `["s"]`)
	ts.expect(t, "GET", "/subjects/s/versions", "", 404, `{"error_code":40401,"message":"Subject 's' not found."}`)
	ts.expect(t, "GET", "/schemas/ids/3", "", 200, `{"schemaType":"AVRO","schema":`+q(recV2)+`}`)
	ts.expect(t, "DELETE", "/subjects/s?permanent=true", "", 200, `[2,3]`)
	ts.expect(t, "DELETE", "/subjects/s?permanent=true", "", 404, `{"error_code":40401,"message":"Subject 's' not found."}`)
	// Versions of a subject start again at 1 after a permanent delete;
	// the schema keeps its id.
	ts.expect(t, "POST", "/subjects/s/versions", body(recV2), 200,
		`{"version":1,"id":3,"schemaType":"AVRO","schema":`+q(recV2)+`}`)

	// normalize=true registers the normalized form; the same schema
	// written otherwise finds it, normalized or not.
	n := `{"namespace":"x","type":"record","name":"N","fields":[{"type":"int","name":"a"}]}`
	nNorm := `{"name":"x.N","type":"record","fields":[{"name":"a","type":"int","order":"ASCENDING"}]}`
	ts.expect(t, "POST", "/subjects/n/versions?normalize=true", body(n), 200,
		`{"version":1,"id":5,"schemaType":"AVRO","schema":`+q(nNorm)+`}`)
	ts.expect(t, "POST", "/subjects/n/versions", body(n), 200,
		`{"version":1,"id":5,"schemaType":"AVRO","schema":`+q(nNorm)+`}`)
	ts.expect(t, "POST", "/subjects/n?normalize=true", body(`{"type":"record","name":"x.N","fields":[{"name":"a","type":"int"}]}`), 200,
		`{"subject":"n","version":1,"id":5,"schemaType":"AVRO","schema":`+q(nNorm)+`}`)
}

// TestHTTPMetadataRuleSet: metadata and ruleSet are stored and returned
// as given (compact), and are part of what makes a schema the same one.
func TestHTTPMetadataRuleSet(t *testing.T) {
	ts := newTestServer(t, openSQLite(t))
	md := `{"properties":{"owner":"team-a"},"tags":{"f":["PII"]}}`
	rs := `{"domainRules":[{"name":"r","kind":"CONDITION","mode":"WRITE","type":"CEL","expr":"message.a > 0"}]}`
	req := `{"schema":` + q(`"int"`) + `,"metadata": ` + md + `,"ruleSet":` + rs + `}`
	ts.expect(t, "POST", "/subjects/m/versions", req, 200,
		`{"version":1,"id":1,"schemaType":"AVRO","metadata":`+md+`,"ruleSet":`+rs+`,"schema":"\"int\""}`)
	ts.expect(t, "GET", "/subjects/m/versions/1", "", 200,
		`{"subject":"m","version":1,"id":1,"schemaType":"AVRO","metadata":`+md+`,"ruleSet":`+rs+`,"schema":"\"int\""}`)
	ts.expect(t, "GET", "/schemas/ids/1", "", 200, `{"schemaType":"AVRO","schema":"\"int\"","metadata":`+md+`,"ruleSet":`+rs+`}`)
	// The same text without them is another schema, with its own id.
	ts.expect(t, "POST", "/subjects/m/versions", body(`"int"`), 200, `{"version":2,"id":2,"schemaType":"AVRO","schema":"\"int\""}`)
	ts.expect(t, "GET", "/subjects/m/metadata?key=owner&value=team-a", "", 200,
		`{"subject":"m","version":1,"id":1,"schemaType":"AVRO","metadata":`+md+`,"ruleSet":`+rs+`,"schema":"\"int\""}`)
	ts.expect(t, "GET", "/subjects/m/metadata?key=owner&value=team-b", "", 404, `{"error_code":40403,"message":"Schema not found"}`)
	ts.expect(t, "GET", "/subjects/nosuch/metadata", "", 404, `{"error_code":40401,"message":"Subject 'nosuch' not found."}`)
	ts.expect(t, "POST", "/subjects/m/versions", req, 200,
		`{"version":1,"id":1,"schemaType":"AVRO","metadata":`+md+`,"ruleSet":`+rs+`,"schema":"\"int\""}`)
}

func TestHTTPReferences(t *testing.T) {
	ts := newTestServer(t, openSQLite(t))
	addr := `{"type":"record","name":"Addr","namespace":"com.ex","fields":[{"name":"city","type":"string"}]}`
	user := `{"type":"record","name":"User","namespace":"com.ex","fields":[{"name":"addr","type":"Addr"}]}`
	ts.expect(t, "POST", "/subjects/addr/versions", body(addr), 200,
		`{"version":1,"id":1,"schemaType":"AVRO","schema":`+q(addr)+`}`)
	withRef := func(version int) string {
		b, _ := json.Marshal(map[string]any{"schema": user, "references": []map[string]any{{"name": "com.ex.Addr", "subject": "addr", "version": version}}})
		return string(b)
	}
	ts.expect(t, "POST", "/subjects/user/versions", withRef(-1), 200,
		`{"version":1,"id":2,"schemaType":"AVRO","references":[{"name":"com.ex.Addr","subject":"addr","version":1}],"schema":`+q(user)+`}`)
	ts.expect(t, "POST", "/subjects/user/versions", withRef(1), 200,
		`{"version":1,"id":2,"schemaType":"AVRO","references":[{"name":"com.ex.Addr","subject":"addr","version":1}],"schema":`+q(user)+`}`)
	ts.expect(t, "GET", "/subjects/addr/versions/1/referencedby", "", 200, `[2]`)
	resolved := `{"type":"record","name":"User","namespace":"com.ex","fields":[{"name":"addr","type":{"type":"record","name":"Addr","fields":[{"name":"city","type":"string"}]}}]}`
	ts.expect(t, "GET", "/schemas/ids/2/schema?format=resolved", "", 200, resolved)
	ts.expect(t, "GET", "/subjects/user/versions/1?format=resolved", "", 200,
		`{"subject":"user","version":1,"id":2,"schemaType":"AVRO","references":[{"name":"com.ex.Addr","subject":"addr","version":1}],"schema":`+q(resolved)+`}`)
	ts.expect(t, "GET", "/subjects/user/versions/1/referencedby", "", 200, `[]`)
	ts.expect(t, "GET", "/subjects/nosuch/versions/1/referencedby", "", 404, `{"error_code":40401,"message":"Subject 'nosuch' not found."}`)
	ts.expect(t, "GET", "/subjects/addr/versions/7/referencedby", "", 404, `{"error_code":40402,"message":"Version 7 not found."}`)
	ts.expect(t, "POST", "/subjects/user2/versions", withRef(5), 422,
		`{"error_code":42201,"message":"Invalid schema, details: reference \"com.ex.Addr\" to subject 'addr' version 5 not found"}`)
	ts.expect(t, "POST", "/subjects/user2/versions", body(user), 422,
		`{"error_code":42201,"message":"Invalid schema of type AVRO, details: unknown type: Addr"}`)
	// A referenced version is not deleted, softly or not.
	ts.expect(t, "DELETE", "/subjects/addr/versions/1", "", 422,
		`{"error_code":42206,"message":"One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=addr,version=1}."}`)
	ts.expect(t, "DELETE", "/subjects/addr", "", 422,
		`{"error_code":42206,"message":"One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=addr,version=1}."}`)
	ts.expect(t, "DELETE", "/subjects/user", "", 200, `[1]`)
	// Soft-deleted referrers still hold it against a permanent delete.
	ts.expect(t, "DELETE", "/subjects/addr", "", 200, `[1]`)
	ts.expect(t, "DELETE", "/subjects/addr?permanent=true", "", 422,
		`{"error_code":42206,"message":"One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=addr,version=1}."}`)
	ts.expect(t, "DELETE", "/subjects/user?permanent=true", "", 200, `[1]`)
	ts.expect(t, "DELETE", "/subjects/addr?permanent=true", "", 200, `[1]`)
}

func TestHTTPModes(t *testing.T) {
	ts := newTestServer(t, openSQLite(t))
	ts.expect(t, "GET", "/mode", "", 200, `{"mode":"READWRITE"}`)
	ts.expect(t, "GET", "/mode/s", "", 404, `{"error_code":40409,"message":"Subject 's' does not have subject-level mode configured"}`)
	ts.expect(t, "GET", "/mode/s?defaultToGlobal=true", "", 200, `{"mode":"READWRITE"}`)
	ts.expect(t, "PUT", "/mode/s", `{"mode":"SIDEWAYS"}`, 422,
		`{"error_code":42204,"message":"Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD."}`)
	ts.expect(t, "POST", "/subjects/s/versions", body(recV1), 200, `{"version":1,"id":1,"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	ts.expect(t, "PUT", "/mode/s", `{"mode":"READONLY"}`, 200, `{"mode":"READONLY"}`)
	ts.expect(t, "POST", "/subjects/s/versions", body(recV2), 422,
		`{"error_code":42205,"message":"Subject s in context . is in read-only mode"}`)
	// A schema already registered is answered before the mode is looked
	// at, as in Confluent.
	ts.expect(t, "POST", "/subjects/s/versions", body(recV1), 200, `{"version":1,"id":1,"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	ts.expect(t, "DELETE", "/subjects/s/versions/1", "", 422,
		`{"error_code":42205,"message":"Subject s in context . is in read-only mode"}`)
	ts.expect(t, "DELETE", "/subjects/s", "", 422,
		`{"error_code":42205,"message":"Subject s in context . is in read-only mode"}`)
	ts.expect(t, "GET", "/subjects/s/versions/1", "", 200, `{"subject":"s","version":1,"id":1,"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	ts.expect(t, "DELETE", "/mode/s", "", 200, `{"mode":"READONLY"}`)
	ts.expect(t, "DELETE", "/mode/s", "", 404, `{"error_code":40401,"message":"Subject 's' not found."}`)

	// IMPORT only where nothing lives, unless forced.
	ts.expect(t, "PUT", "/mode", `{"mode":"IMPORT"}`, 422, `{"error_code":42205,"message":"Cannot import since found existing subjects"}`)
	ts.expect(t, "PUT", "/mode/s", `{"mode":"IMPORT"}`, 422, `{"error_code":42205,"message":"Cannot import since found existing subjects"}`)
	ts.expect(t, "PUT", "/mode/t", `{"mode":"IMPORT"}`, 200, `{"mode":"IMPORT"}`)
	ts.expect(t, "POST", "/subjects/t/versions", body(recV1), 422,
		`{"error_code":42205,"message":"Subject t in context . is not in read-write mode"}`)
	ts.expect(t, "POST", "/subjects/s/versions", `{"schema":`+q(recV2)+`,"id":50,"version":5}`, 422,
		`{"error_code":42205,"message":"Subject s in context . is not in import mode"}`)
	// Given ids and versions, no compatibility check.
	ts.expect(t, "POST", "/subjects/t/versions", `{"schema":`+q(recV3)+`,"id":100,"version":3}`, 200,
		`{"version":3,"id":100,"schemaType":"AVRO","schema":`+q(recV3)+`}`)
	ts.expect(t, "POST", "/subjects/t/versions", `{"schema":`+q(recV1)+`,"id":7,"version":7}`, 200,
		`{"version":7,"id":7,"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	ts.expect(t, "POST", "/subjects/t/versions", `{"schema":`+q(recV2)+`,"id":100,"version":8}`, 422,
		`{"error_code":42205,"message":"Overwrite new schema with id 100 in context . is not permitted."}`)
	ts.expect(t, "PUT", "/mode", `{"mode":"IMPORT"}`, 422, `{"error_code":42205,"message":"Cannot import since found existing subjects"}`)
	ts.expect(t, "PUT", "/mode?force=true", `{"mode":"IMPORT"}`, 200, `{"mode":"IMPORT"}`)
	ts.expect(t, "DELETE", "/mode/t", "", 200, `{"mode":"IMPORT"}`)
	ts.expect(t, "DELETE", "/mode", "", 200, `{"mode":"IMPORT"}`)
	ts.expect(t, "DELETE", "/mode", "", 200, `{"mode":"READWRITE"}`)
	ts.expect(t, "PUT", "/mode", `{"mode":"READWRITE"}`, 200, `{"mode":"READWRITE"}`)
	// Ids allocated after an import go past the imported ones.
	ts.expect(t, "POST", "/subjects/u/versions", body(`"int"`), 200, `{"version":1,"id":101,"schemaType":"AVRO","schema":"\"int\""}`)
	ts.expect(t, "GET", "/subjects/t/versions", "", 200, `[3,7]`)
}

func TestHTTPBadInput(t *testing.T) {
	ts := newTestServer(t, openSQLite(t))
	ts.expect(t, "POST", "/subjects/s/versions", body(recV1), 200, `{"version":1,"id":1,"schemaType":"AVRO","schema":`+q(recV1)+`}`)
	big := `{"type":"record","name":"R","doc":"` + strings.Repeat("x", 10<<20) + `","fields":[]}`
	for _, tc := range []struct {
		name, method, path, ct, body string
		status                       int
		want                         string
	}{
		{"junk json", "POST", "/subjects/s/versions", jsonCT, `{"schema":`, 400, ``},
		{"not an object", "POST", "/subjects/s/versions", jsonCT, `[1,2]`, 422, ``},
		{"trailing junk", "POST", "/subjects/s/versions", jsonCT, `{"schema":"\"int\""} x`, 400, `{"error_code":400,"message":"Unexpected content after the JSON body"}`},
		{"empty body", "POST", "/subjects/s/versions", jsonCT, ``, 422, `{"error_code":422,"message":"Request body is missing"}`},
		{"wrong content type", "POST", "/subjects/s/versions", "text/plain", body(recV1), 415, `{"error_code":415,"message":"HTTP 415 Unsupported Media Type"}`},
		{"octet-stream", "POST", "/subjects/s/versions", "application/octet-stream", body(recV1), 200, `{"version":1,"id":1,"schemaType":"AVRO","schema":` + q(recV1) + `}`},
		{"json", "POST", "/subjects/s/versions", "application/json; charset=utf-8", body(recV1), 200, `{"version":1,"id":1,"schemaType":"AVRO","schema":` + q(recV1) + `}`},
		{"unknown fields ignored", "POST", "/subjects/s/versions", "application/vnd.schemaregistry+json", `{"schema":` + q(recV1) + `,"flavour":"mint","schemaTagsToAdd":[]}`, 200, `{"version":1,"id":1,"schemaType":"AVRO","schema":` + q(recV1) + `}`},
		{"empty schema", "POST", "/subjects/new/versions", jsonCT, `{"schema":""}`, 422, `{"error_code":42201,"message":"Empty schema"}`},
		{"invalid avro", "POST", "/subjects/s/versions", jsonCT, body(`{"type":"record","name":"R"}`), 422, `{"error_code":42201,"message":"Invalid schema of type AVRO, details: record must have an array of fields"}`},
		{"not json avro", "POST", "/subjects/s/versions", jsonCT, body(`string`), 422, `{"error_code":42201,"message":"Invalid schema of type AVRO, details: invalid character 's' looking for beginning of value"}`},
		{"invalid json schema", "POST", "/subjects/s/versions", jsonCT, `{"schemaType":"JSON","schema":"{\"type\":7}"}`, 422, ``},
		{"invalid protobuf", "POST", "/subjects/s/versions", jsonCT, `{"schemaType":"PROTOBUF","schema":"message {"}`, 422, ``},
		{"unknown type", "POST", "/subjects/s/versions", jsonCT, `{"schemaType":"XML","schema":"<a/>"}`, 422, `{"error_code":42201,"message":"Invalid schema type XML"}`},
		{"10 MiB schema", "POST", "/subjects/s/versions", jsonCT, body(big), 422, `{"error_code":42209,"message":"Register operation failed because schema is too large"}`},
		{"too large body", "POST", "/subjects/s/versions", jsonCT, body(big + big), 413, `{"error_code":413,"message":"HTTP 413 Request Entity Too Large"}`},
		{"bad version", "GET", "/subjects/s/versions/abc", "", "", 422, `{"error_code":42202,"message":"The specified version 'abc' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\""}`},
		{"version 0", "GET", "/subjects/s/versions/0", "", "", 422, `{"error_code":42202,"message":"The specified version '0' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\""}`},
		{"version too big", "DELETE", "/subjects/s/versions/2147483648", "", "", 422, `{"error_code":42202,"message":"The specified version '2147483648' is not a valid version id. Allowed values are between [1, 2^31-1] and the string \"latest\""}`},
		{"unknown subject", "GET", "/subjects/nosuch/versions/1", "", "", 404, `{"error_code":40401,"message":"Subject 'nosuch' not found."}`},
		{"unknown version", "GET", "/subjects/s/versions/9", "", "", 404, `{"error_code":40402,"message":"Version 9 not found."}`},
		{"unknown id", "GET", "/schemas/ids/999", "", "", 404, `{"error_code":40403,"message":"Schema 999 not found"}`},
		{"unknown id subjects", "GET", "/schemas/ids/999/subjects", "", "", 404, `{"error_code":40403,"message":"Schema not found"}`},
		{"unknown id versions", "GET", "/schemas/ids/999/versions", "", "", 404, `{"error_code":40403,"message":"Schema not found"}`},
		{"unknown id schema", "GET", "/schemas/ids/999/schema", "", "", 404, `{"error_code":40403,"message":"Schema 999 not found"}`},
		{"id not a number", "GET", "/schemas/ids/x", "", "", 404, `{"error_code":404,"message":"HTTP 404 Not Found"}`},
		{"unknown path", "GET", "/nothing/here", "", "", 404, `{"error_code":404,"message":"HTTP 404 Not Found"}`},
		{"wrong method", "PATCH", "/subjects", "", "", 405, `{"error_code":405,"message":"HTTP 405 Method Not Allowed"}`},
		{"bad subject", "POST", "/subjects/a%01b/versions", jsonCT, body(recV1), 422, `{"error_code":42208,"message":"The specified subject 'a\u0001b' is not a valid."}`},
		{"huge limit", "GET", "/schemas?limit=2147483647", "", "", 200, `[{"subject":"s","version":1,"id":1,"schemaType":"AVRO","schema":` + q(recV1) + `}]`},
		{"limit not a number", "GET", "/schemas?limit=lots", "", "", 404, `{"error_code":404,"message":"HTTP 404 Not Found"}`},
		{"bad reference", "POST", "/subjects/s/versions", jsonCT, `{"schema":"\"int\"","references":[{"name":"","subject":"","version":1}]}`, 422, `{"error_code":42201,"message":"Invalid schema of type AVRO, details: a reference needs a name and a subject"}`},
		{"references wrong type", "POST", "/subjects/s/versions", jsonCT, `{"schema":"\"int\"","references":"x"}`, 422, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, got := ts.do(t, tc.method, tc.path, tc.ct, tc.body)
			checkGUIDs(t, got)
			got = guidField.ReplaceAllString(got, "")
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, got)
			}
			if tc.want != "" && got != tc.want {
				t.Fatalf("body\n got %s\nwant %s", got, tc.want)
			}
			var e struct {
				Code    int    `json:"error_code"`
				Message string `json:"message"`
			}
			if status != http.StatusOK && (json.Unmarshal([]byte(got), &e) != nil || e.Code/100 != status && e.Code != status || e.Message == "") {
				t.Fatalf("error body %s", got)
			}
		})
	}
}
