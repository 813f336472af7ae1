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
	"maps"
	"slices"
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

// aliasesOf lists each floe name's aliases in a fixed order, Confluent's
// before Redpanda's.
var aliasesOf = func() map[string][]string {
	m := map[string][]string{}
	for _, alias := range slices.Sorted(maps.Keys(Aliases)) {
		m[Aliases[alias]] = append(m[Aliases[alias]], alias)
	}
	return m
}()

// RulesOf reads a topic's rules from its configs, floe's names over the
// aliases, Confluent's over Redpanda's. Values are assumed valid
// (CheckMode, CheckStrategy at write). It runs for every produced topic:
// a few map look-ups, no allocation.
func RulesOf(configs map[string]string) Rules {
	if len(configs) == 0 {
		return Rules{}
	}
	get := func(name string) string {
		if v, ok := configs[name]; ok {
			return v
		}
		for _, alias := range aliasesOf[name] {
			if v, ok := configs[alias]; ok {
				return v
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

// Checker checks the records of one batch of one topic. It remembers, for
// the batch, what it learnt of each schema id (the schema, whether the
// record's subject holds it), so a batch written with one schema costs one
// look-up, and a record in mode true costs the parse of its five-byte
// header. Not safe for concurrent use: one per batch.
type Checker struct {
	reg   Registry
	topic string
	rules Rules
	ids   []idVerdict
	buf   [2]idVerdict // ids' first home: a key's and a value's schema
}

// idVerdict is what a Checker learnt of one (side, id, message index).
type idVerdict struct {
	key    bool
	id     int
	index  []int // Protobuf's message indexes, when the subject depends on them
	schema schemaregistry.Schema
	err    error // the id's refusal, or nil
}

// NewChecker checks records of topic against its rules through reg.
func NewChecker(reg Registry, topic string, rules Rules) *Checker {
	c := &Checker{reg: reg, topic: topic, rules: rules}
	c.ids = c.buf[:0]
	return c
}

// Batch checks the records of one batch as kafkaproto.ValidateRecords
// walks them (Visit, for RecordRules.Visit), so that the batch is walked
// once: each record's key, then its value, the first refusal kept per
// record. A registry failure ends the checking (Err); what Visit saw
// stands only if the walk accepts the batch.
type Batch struct {
	ctx     context.Context
	c       Checker
	Refused []Refused
	Err     error // the registry's failure, or nil
}

// Refused is a record of the batch (its index) and why it was refused.
type Refused struct {
	Record int32
	*Refusal
}

// NewBatch checks one batch of topic's records against its rules.
func NewBatch(ctx context.Context, reg Registry, topic string, rules Rules) *Batch {
	b := &Batch{ctx: ctx, c: Checker{reg: reg, topic: topic, rules: rules}}
	b.c.ids = b.c.buf[:0]
	return b
}

// Visit checks record i's key and value.
func (b *Batch) Visit(i int32, key, value []byte) {
	if b.Err != nil {
		return
	}
	err := b.c.Check(b.ctx, true, key)
	if err == nil {
		err = b.c.Check(b.ctx, false, value)
	}
	if err == nil {
		return
	}
	var ref *Refusal
	if !errors.As(err, &ref) {
		b.Err = err
		return
	}
	b.Refused = append(b.Refused, Refused{i, ref})
}

// Check checks one record's key (isKey) or value. A refused record gets a
// *Refusal; any other error is the registry's (the store unreachable) and
// says nothing of the record. A null key or value is not checked: a
// tombstone or an unkeyed record carries no schema.
func (c *Checker) Check(ctx context.Context, isKey bool, data []byte) error {
	rule := c.rules.Value
	side := "value"
	if isKey {
		rule, side = c.rules.Key, "key"
	}
	if rule.Mode == Off || data == nil {
		return nil
	}
	var h sr.ConfluentHeader
	id, rest, err := h.DecodeID(data)
	if err != nil {
		return &Refusal{Unframed, fmt.Sprintf("%s is not framed with a schema id (magic byte 0 and a 4-byte id)", side)}
	}
	var sch *schemaregistry.Schema // not copied per record: it is large
	if v := c.verdict(isKey, id, false, nil); v != nil {
		sch = &v.schema
	} else {
		s, err := c.reg.SchemaByID(ctx, id)
		if errors.Is(err, schemaregistry.ErrUnknownSchema) {
			return &Refusal{UnknownID, fmt.Sprintf("%s names schema id %d, which the registry does not have", side, id)}
		} else if err != nil {
			return fmt.Errorf("schema %d: %w", id, err)
		}
		sch = &s
	}
	// Protobuf's message indexes are read only when they matter: to
	// decode the payload, or to name a record subject. Under
	// TopicNameStrategy in mode true a record is its framed id alone.
	var index []int
	byIndex := false
	if sch.Type == format.Protobuf && (rule.Mode == Full || rule.Strategy != TopicName) {
		if index, rest, err = h.DecodeIndex(rest, 64); err != nil {
			return &Refusal{BadIndex, fmt.Sprintf("%s's Protobuf message indexes do not decode: %v", side, err)}
		}
		byIndex = rule.Strategy != TopicName
	}
	v := c.verdict(isKey, id, byIndex, index)
	if v == nil {
		c.ids = append(c.ids, idVerdict{key: isKey, id: id, index: index, schema: *sch,
			err: c.subjectHolds(ctx, side, rule, sch, id, index)})
		v = &c.ids[len(c.ids)-1]
	}
	if v.err == nil && rule.Mode == Full {
		return c.decodes(side, id, sch, index, rest)
	}
	return v.err
}

// verdict is what the batch learnt of (side, id) and, when the subject
// depends on it (byIndex), the message index; without byIndex it also
// finds the schema of an id whatever its index. Nil if nothing.
func (c *Checker) verdict(isKey bool, id int, byIndex bool, index []int) *idVerdict {
	for i := range c.ids {
		if v := &c.ids[i]; v.key == isKey && v.id == id && (!byIndex || slices.Equal(v.index, index)) {
			return v
		}
	}
	return nil
}

// subjectHolds checks that the record's subject holds schema id.
func (c *Checker) subjectHolds(ctx context.Context, side string, rule Rule, s *schemaregistry.Schema, id int, index []int) error {
	subject, err := subjectOf(c.topic, side, rule.Strategy, s, index)
	if err != nil {
		return &Refusal{BadIndex, fmt.Sprintf("%s: %v", side, err)}
	}
	ok, err := c.reg.SubjectHasID(ctx, subject, id)
	if err != nil {
		return fmt.Errorf("subject %s: %w", subject, err)
	}
	if !ok {
		return &Refusal{WrongSubject, fmt.Sprintf("%s's schema id %d is not registered under subject %s", side, id, subject)}
	}
	return nil
}

// decodes checks a payload against its schema (mode full).
func (c *Checker) decodes(side string, id int, s *schemaregistry.Schema, index []int, payload []byte) error {
	if err := s.Parsed.Validate(index, payload); err != nil {
		if errors.Is(err, format.ErrUnknownIndex) {
			return &Refusal{BadIndex, fmt.Sprintf("%s: %v", side, err)}
		}
		return &Refusal{Invalid, fmt.Sprintf("%s does not decode with schema id %d: %v", side, id, err)}
	}
	return nil
}

// Check checks one record alone: a Checker of one record, for rule on the
// given side.
func Check(ctx context.Context, reg Registry, topic string, isKey bool, rule Rule, data []byte) error {
	rules := Rules{Value: rule}
	if isKey {
		rules = Rules{Key: rule}
	}
	return NewChecker(reg, topic, rules).Check(ctx, isKey, data)
}

// subjectOf names the subject of a record's schema under a strategy.
func subjectOf(topic, side string, st Strategy, s *schemaregistry.Schema, index []int) (string, error) {
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
