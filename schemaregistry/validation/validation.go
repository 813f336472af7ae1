// Package validation is the broker's side of the schema registry: per topic,
// whether produced keys and values must carry a schema id registered under
// the topic's subject (Confluent's wire format: magic byte 0, a 4-byte
// schema id, for Protobuf the message indexes, then the payload) and, in
// full mode, whether the payload decodes with that schema — Avro, JSON
// Schema and Protobuf alike. The agent's produce path asks Check for each
// record of a topic whose rules are on and refuses the partition with
// INVALID_RECORD naming the records at fault.
//
// Schemas are looked up by id through the registry's cache (ids are
// immutable), so a warm agent checks a batch with no store read; which
// subjects hold an id is cached for the registry's SubjectTTL.
//
// The package never reads records off the wire or answers clients: it
// decides one record at a time.
package validation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	havro "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"floe/schemaregistry"
	"floe/schemaregistry/avro"
	"floe/schemaregistry/format"
	"floe/schemaregistry/jsonschema"
	"floe/schemaregistry/protobuf"
)

// Topic config names: floe's own, and the names Confluent Server and
// Redpanda give the same settings, taken as aliases (floe's win when both
// are set).
const (
	ConfigValue         = "floe.value.schema.validation"
	ConfigKey           = "floe.key.schema.validation"
	ConfigValueStrategy = "floe.value.subject.name.strategy"
	ConfigKeyStrategy   = "floe.key.subject.name.strategy"
)

// Aliases maps each alias to floe's name.
var Aliases = map[string]string{
	"confluent.value.schema.validation":     ConfigValue,
	"confluent.key.schema.validation":       ConfigKey,
	"confluent.value.subject.name.strategy": ConfigValueStrategy,
	"confluent.key.subject.name.strategy":   ConfigKeyStrategy,
	"redpanda.value.schema.id.validation":   ConfigValue,
	"redpanda.key.schema.id.validation":     ConfigKey,
	"redpanda.value.subject.name.strategy":  ConfigValueStrategy,
	"redpanda.key.subject.name.strategy":    ConfigKeyStrategy,
}

// Mode is how much of a record is checked.
type Mode uint8

const (
	// Off checks nothing (false, the default).
	Off Mode = iota
	// ID: the record is framed with a schema id registered under the
	// subject (true).
	ID
	// Full: ID, and the payload decodes with that schema (full).
	Full
)

// Strategy names the subject a record's schema must be registered under.
type Strategy uint8

const (
	// TopicName: <topic>-key or <topic>-value (the default).
	TopicName Strategy = iota
	// RecordName: the record's fully-qualified name (Avro record,
	// Protobuf message, JSON Schema title).
	RecordName
	// TopicRecordName: <topic>-<record name>.
	TopicRecordName
)

// Rule is one side's (key's or value's) setting.
type Rule struct {
	Mode     Mode
	Strategy Strategy
}

// Rules are a topic's settings for keys and values.
type Rules struct{ Key, Value Rule }

// On reports whether any record of the topic is checked.
func (r Rules) On() bool { return r.Key.Mode != Off || r.Value.Mode != Off }

// RulesOf reads a topic's rules from its configs, floe's names over the
// aliases. Values are assumed valid (CheckMode, CheckStrategy at write).
func RulesOf(configs map[string]string) Rules {
	get := func(name string) string {
		if v, ok := configs[name]; ok {
			return v
		}
		for alias, n := range Aliases {
			if n == name {
				if v, ok := configs[alias]; ok {
					return v
				}
			}
		}
		return ""
	}
	mode := func(v string) Mode {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return ID
		case "full":
			return Full
		}
		return Off
	}
	return Rules{
		Key:   Rule{Mode: mode(get(ConfigKey)), Strategy: strategy(get(ConfigKeyStrategy))},
		Value: Rule{Mode: mode(get(ConfigValue)), Strategy: strategy(get(ConfigValueStrategy))},
	}
}

// strategy parses a strategy: its short name or Confluent's class name.
func strategy(v string) Strategy {
	v = strings.TrimSpace(v)
	v = v[strings.LastIndexByte(v, '.')+1:]
	switch v {
	case "RecordNameStrategy":
		return RecordName
	case "TopicRecordNameStrategy":
		return TopicRecordName
	}
	return TopicName
}

// CheckMode returns why v is not a validation mode, or "".
func CheckMode(v string) string {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "false", "full":
		return ""
	}
	return "String must be one of: false, true, full"
}

// CheckStrategy returns why v is not a subject name strategy, or "".
func CheckStrategy(v string) string {
	v = strings.TrimSpace(v)
	short := v[strings.LastIndexByte(v, '.')+1:]
	switch short {
	case "TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy":
		if short == v || strings.HasPrefix(v, "io.confluent.kafka.serializers.subject.") {
			return ""
		}
	}
	return "String must be one of: TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy (or io.confluent.kafka.serializers.subject.<name>)"
}

// Registry is what Check needs of the schema registry (schemaregistry.Server).
type Registry interface {
	SchemaByID(ctx context.Context, id int) (schemaregistry.Schema, error)
	SubjectHasID(ctx context.Context, subject string, id int) (bool, error)
}

// Reason is why a record was refused, as the metric's reason label says it.
type Reason string

const (
	Unframed     Reason = "unframed"      // no magic byte 0 and schema id
	UnknownID    Reason = "unknown_id"    // the id names no schema
	WrongSubject Reason = "wrong_subject" // the schema is not registered under the record's subject
	BadIndex     Reason = "bad_index"     // Protobuf message indexes missing or naming no message
	Invalid      Reason = "invalid"       // the payload does not decode with the schema
)

// Refusal is a record Check refused.
type Refusal struct {
	Reason Reason
	Msg    string
}

func (r *Refusal) Error() string { return r.Msg }

// Check checks one record's key (isKey) or value against rule for topic.
// A refused record gets a *Refusal; any other error is the registry's
// (the store unreachable) and says nothing of the record. A null key or
// value is not checked: a tombstone or an unkeyed record carries no
// schema.
func Check(ctx context.Context, reg Registry, topic string, isKey bool, rule Rule, data []byte) error {
	if rule.Mode == Off || data == nil {
		return nil
	}
	side := "value"
	if isKey {
		side = "key"
	}
	var h sr.ConfluentHeader
	id, rest, err := h.DecodeID(data)
	if err != nil {
		return &Refusal{Unframed, fmt.Sprintf("%s is not framed with a schema id (magic byte 0 and a 4-byte id)", side)}
	}
	s, err := reg.SchemaByID(ctx, id)
	if errors.Is(err, schemaregistry.ErrUnknownSchema) {
		return &Refusal{UnknownID, fmt.Sprintf("%s names schema id %d, which the registry does not have", side, id)}
	}
	if err != nil {
		return fmt.Errorf("schema %d: %w", id, err)
	}
	var index []int
	if s.Type == format.Protobuf {
		if index, rest, err = h.DecodeIndex(rest, 64); err != nil {
			return &Refusal{BadIndex, fmt.Sprintf("%s's Protobuf message indexes do not decode: %v", side, err)}
		}
	}
	subject, err := subjectOf(topic, side, rule.Strategy, s, index)
	if err != nil {
		return &Refusal{BadIndex, fmt.Sprintf("%s: %v", side, err)}
	}
	ok, err := reg.SubjectHasID(ctx, subject, id)
	if err != nil {
		return fmt.Errorf("subject %s: %w", subject, err)
	}
	if !ok {
		return &Refusal{WrongSubject, fmt.Sprintf("%s's schema id %d is not registered under subject %s", side, id, subject)}
	}
	if rule.Mode == Full {
		if err := s.Parsed.Validate(index, rest); err != nil {
			if errors.Is(err, format.ErrUnknownIndex) {
				return &Refusal{BadIndex, fmt.Sprintf("%s: %v", side, err)}
			}
			return &Refusal{Invalid, fmt.Sprintf("%s does not decode with schema id %d: %v", side, id, err)}
		}
	}
	return nil
}

// subjectOf names the subject of a record's schema under a strategy.
func subjectOf(topic, side string, st Strategy, s schemaregistry.Schema, index []int) (string, error) {
	if st == TopicName {
		return topic + "-" + side, nil
	}
	name, err := RecordNameOf(s.Parsed, index)
	if err != nil {
		return "", err
	}
	if st == TopicRecordName {
		return topic + "-" + name, nil
	}
	return name, nil
}

// RecordNameOf is the record name Confluent's RecordNameStrategy takes
// from a schema: an Avro named type's full name, the Protobuf message's
// full name at index, a JSON Schema's title.
func RecordNameOf(s format.Schema, index []int) (string, error) {
	switch s := s.(type) {
	case *avro.Schema:
		if n, ok := s.Avro().(havro.NamedSchema); ok {
			return n.FullName(), nil
		}
		return "", errors.New("the Avro schema is not a named type, so it has no record name")
	case *protobuf.Schema:
		md, err := s.Message(index)
		if err != nil {
			return "", err
		}
		return string(md.FullName()), nil
	case *jsonschema.Schema:
		var doc struct {
			Title string `json:"title"`
		}
		if json.Unmarshal([]byte(s.Canonical()), &doc) != nil || doc.Title == "" {
			return "", errors.New("the JSON Schema has no title, so it has no record name")
		}
		return doc.Title, nil
	}
	return "", fmt.Errorf("no record name for a %T", s)
}
