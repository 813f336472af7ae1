package iceberg

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
	"floe/topicconfig"
)

// The topic's Iceberg configs join the agent's table of topic configs,
// checked by CheckTopicConfig: linking this package (cmd/floe does) is
// what makes them known.
func init() {
	topicconfig.RegisterSetCheck(checkConfigSet)
	topicconfig.Register(ConfigEnabled, topicconfig.Def{Type: kmsg.ConfigTypeBoolean, Default: "false", Effect: topicconfig.Enforced,
		Check: configCheck(ConfigEnabled),
		Doc:   "true: the compactor's converter keeps the topic's committed records in the Iceberg table of the same name (dots become underscores), backfilled from the log start, and retention keeps records until they are in it. Unset follows the converter's --iceberg-default, reported here as false."})
	topicconfig.Register(ConfigPartitionSpec, topicconfig.Def{Type: kmsg.ConfigTypeString, Default: DefaultPartitionSpec, Effect: topicconfig.Enforced,
		Check: configCheck(ConfigPartitionSpec),
		Doc:   "The Iceberg table's partition spec when the converter creates it: TRANSFORM(COLUMN), comma-separated, with Iceberg's transforms identity, year, month, day, hour, bucket[N], truncate[W], void over partition, offset, timestamp, timestamp_type, key, value, or in typed modes over value columns too (customer.region for a nested field), checked against the first schema the table takes in: records whose schema lacks a column or has one of a type its transform does not take go to the __dlq table, reason partition_spec. Changing it later does not change an existing table."})
	topicconfig.Register(ConfigValueMode, topicconfig.Def{Type: kmsg.ConfigTypeString, Default: ModeBinary, Effect: topicconfig.Enforced,
		Check: configCheck(ConfigValueMode),
		Doc:   "How the Iceberg table holds record values: binary (one value column, the default), schema_id_prefix (values framed with a schema registry id, decoded into typed columns; records that cannot be go to the table's __dlq table), schema_latest (unframed values decoded with the latest schema of floe.value.subject) or json (columns inferred from JSON values). Modes a floe version does not convert leave the topic unconverted."})
	topicconfig.Register(ConfigKeyMode, topicconfig.Def{Type: kmsg.ConfigTypeString, Default: ModeBinary, Effect: topicconfig.Enforced,
		Check: configCheck(ConfigKeyMode),
		Doc:   "As floe.value.mode, for keys."})
	topicconfig.Register(ConfigValueSubject, topicconfig.Def{Type: kmsg.ConfigTypeString, Effect: topicconfig.Enforced,
		Check: configCheck(ConfigValueSubject),
		Doc:   "The subject whose latest schema decodes values in schema_latest mode; unset: <topic>-value."})
	topicconfig.Register(ConfigKeySubject, topicconfig.Def{Type: kmsg.ConfigTypeString, Effect: topicconfig.Enforced,
		Check: configCheck(ConfigKeySubject),
		Doc:   "The subject whose latest schema decodes keys in schema_latest mode; unset: <topic>-key."})
	topicconfig.Register(ConfigValueProtobufMessage, topicconfig.Def{Type: kmsg.ConfigTypeString, Effect: topicconfig.Enforced,
		Check: configCheck(ConfigValueProtobufMessage),
		Doc:   "In schema_latest mode with a Protobuf schema, the fully qualified message values are; unset: the schema's first message."})
}

// configCheck validates one of this package's topic configs in the words
// the agent's table uses.
func configCheck(name string) func(string) string {
	return func(v string) string {
		if err := CheckTopicConfig(name, v); err != nil {
			return err.Error()
		}
		return ""
	}
}

// checkConfigSet refuses a partition spec that names value columns on a
// topic whose table has none (both modes binary), and one that takes the
// year, month, day or hour of a column json mode infers (it infers no
// dates or timestamps). Other value columns are only known from the
// records' schemas, bound when the table takes in its first one (see
// typed_spec.go).
func checkConfigSet(configs map[string]string) (string, string) {
	spec, ok := configs[ConfigPartitionSpec]
	if !ok {
		return "", ""
	}
	cfg := topicTypedConfig(metadata.Topic{Configs: configs})
	if !cfg.typed() {
		if _, err := ParsePartitionSpec(spec); err != nil {
			return ConfigPartitionSpec, err.Error()
		}
		return "", ""
	}
	terms, err := parseSpecTerms(spec)
	if err != nil {
		return ConfigPartitionSpec, err.Error()
	}
	for _, t := range terms {
		mode, side := cfg.valueMode, ConfigValueMode
		if strings.HasPrefix(t.col, ColTypedKey+".") {
			mode, side = cfg.keyMode, ConfigKeyMode
		}
		switch t.tr.(type) {
		case iceberg.YearTransform, iceberg.MonthTransform, iceberg.DayTransform, iceberg.HourTransform:
			if mode == ModeJSON && !slices.Contains(kafkaSpecColumns, t.col) {
				return ConfigPartitionSpec, fmt.Sprintf("partition spec term %q: with %s=%s, columns are inferred from JSON values as boolean, long, double, string, struct or list: %s takes dates and timestamps",
					t.text, side, ModeJSON, t.tr)
			}
		}
	}
	return "", ""
}
