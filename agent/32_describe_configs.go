package agent

// DescribeConfigs (key 32), versions 0–4.
//
// Topics report every config a Kafka topic reports that floe knows, with
// source DYNAMIC_TOPIC_CONFIG when set on the topic and DEFAULT_CONFIG
// otherwise. Brokers (this agent's node id, or "" for cluster defaults)
// report the basics clients and tools read.

import (
	"context"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DescribeConfigs), AdvertisedMin: 0, HandledMin: 0, Max: 4})
}

func (a *Agent) handleDescribeConfigs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		want := func(name string) bool {
			if rr.ConfigNames == nil {
				return true
			}
			for _, n := range rr.ConfigNames {
				if n == name {
					return true
				}
			}
			return false
		}
		add := func(name, value string, source kmsg.ConfigSource, readOnly bool) {
			if !want(name) {
				return
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.ReadOnly = name, readOnly
			v := value
			c.Value = &v
			c.Source = source
			c.IsDefault = source == kmsg.ConfigSourceDefaultConfig
			c.ConfigType = configType(name)
			if req.IncludeSynonyms {
				s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				s.Name, s.Value, s.Source = name, &v, source
				c.ConfigSynonyms = append(c.ConfigSynonyms, s)
			}
			sr.Configs = append(sr.Configs, c)
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t, ok, err := a.topics.get(ctx, rr.ResourceName)
			switch {
			case err != nil:
				sr.ErrorCode = kerr.UnknownServerError.Code
			case !ok:
				sr.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				for _, name := range sortedConfigNames(t) {
					v, explicit := topicConfig(t, name)
					src := kmsg.ConfigSourceDefaultConfig
					if explicit {
						src = kmsg.ConfigSourceDynamicTopicConfig
					}
					add(name, v, src, false)
				}
			}
		case kmsg.ConfigResourceTypeBroker:
			if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(a.self.NodeID)) {
				sr.ErrorCode = kerr.InvalidRequest.Code
				break
			}
			for _, kv := range a.brokerConfigs() {
				add(kv[0], kv[1], kmsg.ConfigSourceStaticBrokerConfig, true)
			}
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func (a *Agent) brokerConfigs() [][2]string {
	return [][2]string{
		{"auto.create.topics.enable", strconv.FormatBool(a.cfg.AutoCreateTopics)},
		{"broker.id", strconv.Itoa(int(a.self.NodeID))},
		{"broker.rack", a.cfg.Zone},
		{"default.replication.factor", "1"},
		{"log.retention.ms", topicConfigDefaults["retention.ms"]},
		{"message.max.bytes", topicConfigDefaults["max.message.bytes"]},
		{"num.partitions", strconv.Itoa(int(a.cfg.DefaultPartitions))},
		{"socket.request.max.bytes", strconv.Itoa(int(a.cfg.MaxRequestSize))},
	}
}

// sortedConfigNames lists the defaults and the topic's explicit configs.
func sortedConfigNames(t metadata.Topic) []string {
	names := make([]string, 0, len(topicConfigDefaults)+len(t.Configs))
	for n := range topicConfigDefaults {
		names = append(names, n)
	}
	for n := range t.Configs {
		if _, ok := topicConfigDefaults[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

func configType(name string) kmsg.ConfigType {
	switch name {
	case "cleanup.policy":
		return kmsg.ConfigTypeList
	case "compression.type", "message.timestamp.type", "broker.rack":
		return kmsg.ConfigTypeString
	case "unclean.leader.election.enable", "auto.create.topics.enable":
		return kmsg.ConfigTypeBoolean
	case "max.message.bytes", "min.insync.replicas", "num.partitions", "default.replication.factor",
		"broker.id", "socket.request.max.bytes", "message.max.bytes":
		return kmsg.ConfigTypeInt
	case "min.cleanable.dirty.ratio":
		return kmsg.ConfigTypeDouble
	}
	return kmsg.ConfigTypeLong
}
