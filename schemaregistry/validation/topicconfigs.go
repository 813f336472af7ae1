package validation

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/topicconfig"
)

// The validation configs join the agent's table of topic configs, under
// floe's names and, as aliases, Confluent Server's and Redpanda's (floe's
// wins when both are set: RulesOf).
func init() {
	topicconfig.Register(ConfigValue, topicconfig.Def{Type: kmsg.ConfigTypeString, Default: "false", Effect: topicconfig.Enforced, Check: CheckMode,
		Doc: "false: values are not checked. true: each value must be framed with a schema id (Confluent's wire format) registered under the value's subject. full: and the payload must decode with that schema (Avro, JSON Schema or Protobuf). A record that fails is refused with INVALID_RECORD."})
	topicconfig.Register(ConfigKey, topicconfig.Def{Type: kmsg.ConfigTypeString, Default: "false", Effect: topicconfig.Enforced, Check: CheckMode,
		Doc: "As floe.value.schema.validation, for keys (subject <topic>-key under TopicNameStrategy)."})
	topicconfig.Register(ConfigValueStrategy, topicconfig.Def{Type: kmsg.ConfigTypeString, Default: "TopicNameStrategy", Effect: topicconfig.Enforced, Check: CheckStrategy,
		Doc: "The subject a value's schema must be registered under: TopicNameStrategy (<topic>-value), RecordNameStrategy (the record's full name) or TopicRecordNameStrategy (<topic>-<record name>)."})
	topicconfig.Register(ConfigKeyStrategy, topicconfig.Def{Type: kmsg.ConfigTypeString, Default: "TopicNameStrategy", Effect: topicconfig.Enforced, Check: CheckStrategy,
		Doc: "As floe.value.subject.name.strategy, for keys."})
	for alias, name := range Aliases {
		d := topicconfig.Defs[name]
		d.Doc = "Alias of " + name + ". " + d.Doc
		topicconfig.Register(alias, d)
	}
}
