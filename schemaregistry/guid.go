package schemaregistry

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"

	"floe/metadata"
)

// A schema's guid, as Confluent 8 gives it: the MD5 of its text, its
// references, metadata and rule set, written as a UUID. Ids are the
// registry's; a guid is the content's, the same in every registry.

// guidOf is Confluent's MD5.ofSchema: the text, each reference's name,
// subject and version (4 bytes, big-endian), then a 1 byte and the
// metadata's tags, properties and sensitive names (sorted), then a 1 byte
// and the rule set. Confluent hashes a rule set field by field; floe hashes
// its compact JSON, so the guid of a schema with a rule set is floe's own.
func guidOf(rec metadata.RegisteredSchema) string {
	h := md5.New()
	h.Write([]byte(rec.Schema))
	for _, ref := range rec.References {
		h.Write([]byte(ref.Name))
		h.Write([]byte(ref.Subject))
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(int32(ref.Version))))
	}
	if rec.Metadata != "" {
		h.Write([]byte{1})
		var m struct {
			Tags       map[string][]string `json:"tags"`
			Properties map[string]string   `json:"properties"`
			Sensitive  []string            `json:"sensitive"`
		}
		if json.Unmarshal([]byte(rec.Metadata), &m) == nil {
			for _, k := range sortedKeys(m.Tags) {
				h.Write([]byte(k))
				vs := slices.Clone(m.Tags[k])
				slices.Sort(vs)
				for _, v := range slices.Compact(vs) {
					h.Write([]byte(v))
				}
			}
			for _, k := range sortedKeys(m.Properties) {
				h.Write([]byte(k))
				h.Write([]byte(m.Properties[k]))
			}
			sens := slices.Clone(m.Sensitive)
			slices.Sort(sens)
			for _, s := range slices.Compact(sens) {
				h.Write([]byte(s))
			}
		}
	}
	if rec.RuleSet != "" {
		h.Write([]byte{1})
		h.Write([]byte(rec.RuleSet))
	}
	var sum [16]byte
	h.Sum(sum[:0])
	x := hex.EncodeToString(sum[:])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// schemaByGUID finds the lowest id whose schema has the guid, reading
// every stored schema a subject version uses: guids are asked for
// rarely, and parsed schemas are cached.
func (s *Server) schemaByGUID(ctx context.Context, guid string) (*parsedSchema, error) {
	rd := s.store.Schemas()
	vs, err := rd.AllSubjectVersions(ctx, "")
	if err != nil {
		return nil, err
	}
	ids := make([]int, 0, len(vs))
	for _, v := range vs {
		ids = append(ids, v.SchemaID)
	}
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		p, err := s.parsed(ctx, rd, id)
		if err != nil {
			return nil, err
		}
		if guidOf(p.rec) == guid {
			return p, nil
		}
	}
	return nil, newErr(http.StatusNotFound, 40403, "Schema %s not found", guid)
}

// getSchemaByGUID is GET /schemas/guids/{guid}.
func (s *Server) getSchemaByGUID(ctx context.Context, r *http.Request) (any, error) {
	p, err := s.schemaByGUID(ctx, r.PathValue("guid"))
	if err != nil {
		return nil, err
	}
	return schemaString(r, p), nil
}

type contextIDJSON struct {
	Context string `json:"context"`
	ID      int    `json:"id"`
}

// getIDsByGUID is GET /schemas/guids/{guid}/ids: the ids with the guid,
// all in the one context floe has.
func (s *Server) getIDsByGUID(ctx context.Context, r *http.Request) (any, error) {
	guid := r.PathValue("guid")
	first, err := s.schemaByGUID(ctx, guid)
	if err != nil {
		return nil, err
	}
	out := []contextIDJSON{{".", first.rec.ID}}
	rd := s.store.Schemas()
	vs, err := rd.AllSubjectVersions(ctx, "")
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{first.rec.ID: true}
	for _, v := range vs {
		if seen[v.SchemaID] {
			continue
		}
		seen[v.SchemaID] = true
		p, err := s.parsed(ctx, rd, v.SchemaID)
		if err != nil {
			return nil, err
		}
		if guidOf(p.rec) == guid {
			out = append(out, contextIDJSON{".", v.SchemaID})
		}
	}
	slices.SortFunc(out, func(a, b contextIDJSON) int { return a.ID - b.ID })
	return out, nil
}
