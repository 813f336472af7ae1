package iceberg

import (
	"errors"
	"fmt"
	"strings"

	"floe/metadata"
)

// Topic configs of typed tables: how a record's value (and key) becomes
// columns. Every one is optional; a topic that sets none keeps the binary
// table of Schema, byte for byte.
const (
	// ConfigValueMode is how values become columns: ModeBinary (the
	// default: one binary value column), ModeSchemaIDPrefix (each value
	// carries Confluent's wire-format schema id and is decoded with that
	// schema), ModeSchemaLatest (unframed values decoded with the latest
	// schema of ConfigValueSubject, default <topic>-value) or ModeJSON (no
	// registry: JSON values, columns inferred).
	ConfigValueMode = "floe.iceberg.value.mode"
	// ConfigKeyMode is ConfigValueMode for keys.
	ConfigKeyMode = "floe.iceberg.key.mode"
	// ConfigValueSubject names the subject ModeSchemaLatest reads values
	// with (default <topic>-value).
	ConfigValueSubject = "floe.iceberg.value.subject"
	// ConfigKeySubject names the subject ModeSchemaLatest reads keys with
	// (default <topic>-key).
	ConfigKeySubject = "floe.iceberg.key.subject"
	// ConfigValueProtobufMessage names the message of a Protobuf subject's
	// schema that ModeSchemaLatest decodes (default: its first message).
	ConfigValueProtobufMessage = "floe.iceberg.value.protobuf.message"
)

// Modes of ConfigValueMode and ConfigKeyMode.
const (
	ModeBinary         = "binary"
	ModeSchemaIDPrefix = "schema_id_prefix"
	ModeSchemaLatest   = "schema_latest"
	ModeJSON           = "json"
)

// errUnsupportedMode marks a topic whose typed config is valid but not yet
// converted by this floe: its table is left alone (nothing committed,
// retention holds its records) until a floe that converts it runs.
var errUnsupportedMode = errors.New("not converted by this floe version")

// typedConfig is a topic's typed-table configuration.
type typedConfig struct {
	valueMode, keyMode string
	valueSubject       string
	keySubject         string
	protobufMessage    string
}

// typed reports whether the topic's table has typed columns (any mode but
// binary), so its layout is TypedSchema's rather than Schema's.
func (c typedConfig) typed() bool { return c.valueMode != ModeBinary || c.keyMode != ModeBinary }

// topicTypedConfig reads a topic's typed-table configs, defaults applied.
func topicTypedConfig(t metadata.Topic) typedConfig {
	c := typedConfig{valueMode: ModeBinary, keyMode: ModeBinary, valueSubject: t.Name + "-value", keySubject: t.Name + "-key"}
	if v := t.Configs[ConfigValueMode]; v != "" {
		c.valueMode = v
	}
	if v := t.Configs[ConfigKeyMode]; v != "" {
		c.keyMode = v
	}
	if v := t.Configs[ConfigValueSubject]; v != "" {
		c.valueSubject = v
	}
	if v := t.Configs[ConfigKeySubject]; v != "" {
		c.keySubject = v
	}
	c.protobufMessage = t.Configs[ConfigValueProtobufMessage]
	return c
}

// supported returns errUnsupportedMode (wrapped, naming the setting) for
// modes this floe does not convert yet.
func (c typedConfig) supported() error {
	switch c.keyMode {
	case ModeBinary, ModeSchemaIDPrefix, ModeSchemaLatest, ModeJSON:
	default:
		return fmt.Errorf("%s=%s: %w", ConfigKeyMode, c.keyMode, errUnsupportedMode)
	}
	switch c.valueMode {
	case ModeBinary, ModeSchemaIDPrefix, ModeSchemaLatest, ModeJSON:
		return nil
	}
	return fmt.Errorf("%s=%s: %w", ConfigValueMode, c.valueMode, errUnsupportedMode)
}

// checkTypedConfig validates one of the typed-table configs; ok is false
// for keys that are not one.
func checkTypedConfig(key, value string) (bool, error) {
	switch key {
	case ConfigValueMode, ConfigKeyMode:
		switch value {
		case ModeBinary, ModeSchemaIDPrefix, ModeSchemaLatest, ModeJSON:
			return true, nil
		}
		return true, fmt.Errorf("must be one of %s, %s, %s, %s", ModeBinary, ModeSchemaIDPrefix, ModeSchemaLatest, ModeJSON)
	case ConfigValueSubject, ConfigKeySubject:
		// Empty is the default, <topic>-value or <topic>-key.
		if (value != "" && strings.TrimSpace(value) == "") || strings.ContainsRune(value, 0) {
			return true, errors.New("must be a subject name")
		}
		return true, nil
	case ConfigValueProtobufMessage:
		// A fully qualified message name: dot-separated identifiers;
		// empty is the default, the schema's first message.
		if value == "" {
			return true, nil
		}
		for _, part := range strings.Split(strings.TrimPrefix(value, "."), ".") {
			if !isIdent(part) {
				return true, fmt.Errorf("must be a Protobuf message name (package.Message), not %q", value)
			}
		}
		return true, nil
	}
	return false, nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
