package topicconfig

// Config changes as AlterConfigs and IncrementalAlterConfigs ask them, and
// what they make of stored configs: a topic's or group's (Apply) and the
// cluster's dynamic broker configs (ApplyBroker, with Kafka's broker-side
// checks).

import (
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Change is one change an alter asks of a resource's configs.
type Change struct {
	Name  string
	Op    kmsg.IncrementalAlterConfigOp
	Value *string // nil only for DELETE
}

// Apply computes a resource's configs after changes, from its stored
// configs cur (changed in place; with replace, legacy AlterConfigs, the
// result is exactly the changes). APPEND and SUBTRACT start from the
// stored list, else from listDefault's, and the list they produce must
// pass check; why it does not is returned (INVALID_CONFIG).
func Apply(cur map[string]string, changes []Change, replace bool, listDefault func(string) string, check func(name, value string) string) (map[string]string, string) {
	if cur == nil || replace {
		cur = map[string]string{}
	}
	for _, c := range changes {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			cur[c.Name] = *c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(cur, c.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			v, ok := cur[c.Name]
			if !ok {
				v = listDefault(c.Name)
			}
			parts := listParts(v)
			for _, e := range strings.Split(*c.Value, ",") {
				if c.Op == kmsg.IncrementalAlterConfigOpAppend && !slices.Contains(parts, e) {
					parts = append(parts, e)
				} else if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
					parts = slices.DeleteFunc(parts, func(p string) bool { return p == e })
				}
			}
			next := strings.Join(parts, ",")
			if why := check(c.Name, next); why != "" {
				return nil, why
			}
			cur[c.Name] = next
		}
	}
	return cur, ""
}

// ApplyTopic is Apply for a topic's configs: lists start from the
// table's defaults and are checked by Check.
func ApplyTopic(cur map[string]string, changes []Change, replace bool) (map[string]string, string) {
	return Apply(cur, changes, replace, func(name string) string { return Defs[name].Default }, Check)
}

// listParts splits a list config's value, dropping empty elements, as
// Kafka does before APPEND and SUBTRACT.
func listParts(v string) []string {
	var parts []string
	for _, p := range strings.Split(v, ",") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return parts
}

// ApplyBroker computes the cluster's dynamic broker configs after changes
// from the stored ones cur, checked as Kafka's broker checks a BROKER
// resource's: APPEND or SUBTRACT on a dynamic config that is no list is
// INVALID_CONFIG ("Config value append is not allowed for config key:
// …"); then, over the configs the change leaves, names that cannot be
// changed dynamically are INVALID_REQUEST "Cannot update these configs
// dynamically: Set(…)" (floe's: every name Broker does not know, the
// configs Kafka lets a broker change that floe has no meaning for
// included), and values CheckBroker refuses INVALID_REQUEST with its
// words (Kafka answers a broker config's ConfigException so, KAFKA-13609).
// perBroker (a broker id named) stores nothing in floe: any value is
// refused, as Kafka refuses per-broker configs at the cluster level. The
// static defaults (Defaults.Static) are where APPEND starts from an unset
// list.
func ApplyBroker(cur map[string]string, changes []Change, replace, perBroker bool, static Defaults) (map[string]string, *kerr.Error, string) {
	for _, c := range changes {
		if c.Op != kmsg.IncrementalAlterConfigOpAppend && c.Op != kmsg.IncrementalAlterConfigOpSubtract {
			continue
		}
		if b, ok := Broker(c.Name); ok && Defs[b.Topic].Type != kmsg.ConfigTypeList {
			op := "append"
			if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
				op = "subtract"
			}
			return nil, kerr.InvalidConfig, "Config value " + op + " is not allowed for config key: " + c.Name
		}
	}
	if perBroker {
		cur = nil // floe keeps no per-broker values
	}
	next, why := Apply(cur, changes, replace,
		func(name string) string { b, _ := Broker(name); return static.Static(b.Topic) },
		func(string, string) string { return "" })
	if why != "" {
		return nil, kerr.InvalidConfig, why
	}
	names := make([]string, 0, len(next))
	for name := range next {
		names = append(names, name)
	}
	sort.Strings(names)
	var fixed []string
	for _, name := range names {
		if _, ok := Broker(name); !ok {
			fixed = append(fixed, name)
		}
	}
	if len(fixed) > 0 {
		return nil, kerr.InvalidRequest, "Cannot update these configs dynamically: " + ScalaSet(fixed)
	}
	for _, name := range names {
		if why := CheckBroker(name, next[name]); why != "" {
			return nil, kerr.InvalidRequest, why
		}
	}
	if perBroker && len(names) > 0 {
		return nil, kerr.InvalidRequest, "Cannot update these configs for one broker, floe sets them at the default cluster level only (an empty broker id): " + ScalaSet(names)
	}
	return next, nil, ""
}
