// Package sqlutil holds the pieces the SQLite and PostgreSQL stores share:
// loading embedded migrations, topic ids, and the configs encoding. It knows
// no SQL dialect.
package sqlutil

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"floe/metadata"
)

// Migration is one embedded schema migration, applied once, in Version order.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// LoadMigrations reads dir/*.sql from fsys. Names must start with a
// positive number followed by '_' (0001_init.sql); numbers must be unique.
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	var ms []Migration
	seen := map[int]string{}
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s: name must start with a number and '_'", base)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, base, v)
		}
		seen[v] = base
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", base, err)
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// NewTopicID returns 16 random bytes, never all zero (Kafka reserves the
// zero id for "no id").
func NewTopicID() (metadata.TopicID, error) {
	var id metadata.TopicID
	for id == (metadata.TopicID{}) {
		if _, err := rand.Read(id[:]); err != nil {
			return id, fmt.Errorf("topic id: %w", err)
		}
	}
	return id, nil
}

// TopicIDFromBytes converts a stored id column.
func TopicIDFromBytes(b []byte) (metadata.TopicID, error) {
	var id metadata.TopicID
	if len(b) != len(id) {
		return id, fmt.Errorf("stored topic id has %d bytes", len(b))
	}
	copy(id[:], b)
	return id, nil
}

// EncodeConfigs stores configs as a JSON object ("{}" when empty).
func EncodeConfigs(c map[string]string) (string, error) {
	if len(c) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode configs: %w", err)
	}
	return string(b), nil
}

// DecodeConfigs is the inverse of EncodeConfigs; it never returns a nil map,
// so callers may add to it.
func DecodeConfigs(s string) (map[string]string, error) {
	c := map[string]string{}
	if s == "" {
		return c, nil
	}
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return nil, fmt.Errorf("decode configs: %w", err)
	}
	return c, nil
}

// RunKey is a (topic, partition) pair used to group a commit's runs.
type RunKey struct {
	Topic     metadata.TopicID
	Partition int32
}

// Less orders keys by topic id bytes, then partition: the lock order of
// CommitObject in every store.
func (k RunKey) Less(o RunKey) bool {
	if c := strings.Compare(string(k.Topic[:]), string(o.Topic[:])); c != 0 {
		return c < 0
	}
	return k.Partition < o.Partition
}
