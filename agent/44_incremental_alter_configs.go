package agent

// IncrementalAlterConfigs (key 44), versions 0–1.
//
// Each resource is checked as Kafka's broker and controller check it: a
// resource named twice is INVALID_REQUEST for both, so are a config named
// twice in one resource, a null value for anything but DELETE and an
// unknown operation.
//
// Topics: SET, DELETE, and APPEND/SUBTRACT on list configs (APPEND to an
// unset list starts from its default, as in Kafka; other types are
// INVALID_CONFIG "Can't APPEND to key …"). Names that are no Kafka topic
// config, values of the wrong type or range, and the values floe does not
// implement of its fixed configs (topicconfig.Defs) are INVALID_CONFIG in
// Kafka's words; the empty name is INVALID_REQUEST, an illegal one
// INVALID_TOPIC_EXCEPTION, an unknown topic UNKNOWN_TOPIC_OR_PARTITION.
// The change is one store transaction on the stored configs
// (Store.UpdateTopicConfigs), so concurrent APPENDs lose nothing. What is
// stored takes effect: the produce path reads the topic's configs through
// the topic cache (this agent's cache is invalidated at once, other
// agents' within TopicCacheTTL) and the compactor reads them from the
// store every round. ValidateOnly checks everything against the stored
// configs and stores nothing.
//
// Brokers: at the cluster default (name ""), the dynamic broker configs
// floe has a meaning for, the defaults of the topic configs it enforces
// or fixes (topicconfig.Broker: log.retention.ms, message.max.bytes, …),
// checked by topicconfig.ApplyBroker as Kafka's broker checks them
// ("Cannot update these configs dynamically: Set(…)" for every other
// name), stored in one store transaction (Store.UpdateClusterConfigs)
// and applied by this agent at once, by the others at their next
// heartbeat and by the compactors at their next round. This agent's node
// id is accepted, but floe keeps no per-broker values: setting one is
// INVALID_REQUEST, a DELETE succeeds. Other names are INVALID_REQUEST.
//
// Groups (KIP-848 group configs, group_configs.go): SET and DELETE of
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms, checked
// as Kafka checks them on the group's configs after the change
// (INVALID_CONFIG: unknown names, share-group ones included, values out of
// range or bounds; APPEND and SUBTRACT, as no group config is a list),
// stored in one store transaction (Store.UpdateGroupConfigs) and applied
// by the group's coordinator; the empty name is INVALID_REQUEST. Broker
// loggers: floe has no named loggers, INVALID_CONFIG. Client metrics
// subscriptions (KIP-714) and other types: INVALID_REQUEST.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
	"floe/topicconfig"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.IncrementalAlterConfigs), AdvertisedMin: 0, HandledMin: 0, Max: 1})
}

// alterError is a resource's answer: a Kafka code and its message.
type alterError struct {
	code *kerr.Error
	msg  string
}

func (e *alterError) Error() string { return e.msg }

// answer is a resource's error code and message: none for nil, and a
// null message for an error without one (UNKNOWN_SERVER_ERROR, whose
// message Kafka withholds: ApiError.fromThrowable).
func (e *alterError) answer() (int16, *string) {
	if e == nil {
		return 0, nil
	}
	if e.msg == "" {
		return e.code.Code, nil
	}
	return e.code.Code, &e.msg
}

func alterErr(code *kerr.Error, format string, args ...any) *alterError {
	return &alterError{code: code, msg: fmt.Sprintf(format, args...)}
}

// resourceKey identifies a config resource within one request.
type resourceKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

func (a *Agent) handleIncrementalAlterConfigs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	resp.Resources = a.alterResources(ctx, r, req.Resources, false, req.ValidateOnly)
	return resp, nil
}

// alterResources answers each resource of an IncrementalAlterConfigs
// request, or of an AlterConfigs one made its SETs (replace), in order
// (the two responses' resources are the same struct). Resources named
// more than once are all refused, as Kafka refuses them: "Each resource
// must appear at most once."
func (a *Agent) alterResources(ctx context.Context, req *request, rs []kmsg.IncrementalAlterConfigsRequestResource, replace, validateOnly bool) []kmsg.IncrementalAlterConfigsResponseResource {
	seen := make(map[resourceKey]int, len(rs))
	for _, r := range rs {
		seen[resourceKey{r.ResourceType, r.ResourceName}]++
	}
	out := make([]kmsg.IncrementalAlterConfigsResponseResource, len(rs))
	for i, r := range rs {
		var err *alterError
		if seen[resourceKey{r.ResourceType, r.ResourceName}] > 1 {
			err = alterErr(kerr.InvalidRequest, "Each resource must appear at most once.")
		} else if code := a.configAuthz(req, opAlterConfigs, r.ResourceType, r.ResourceName); code != nil {
			err = alterErr(code, "%s", code.Message)
		} else {
			changes := make([]topicconfig.Change, len(r.Configs))
			for j, c := range r.Configs {
				changes[j] = topicconfig.Change{Name: c.Name, Op: c.Op, Value: c.Value}
			}
			err = a.alterResource(ctx, r.ResourceType, r.ResourceName, changes, replace, validateOnly)
		}
		out[i] = kmsg.NewIncrementalAlterConfigsResponseResource()
		out[i].ResourceType, out[i].ResourceName = r.ResourceType, r.ResourceName
		out[i].ErrorCode, out[i].ErrorMessage = err.answer()
	}
	return out
}

// alterResource applies changes to one resource, or checks them when
// validateOnly. replace (legacy AlterConfigs) makes the changes, all SETs,
// the resource's whole set of configs.
func (a *Agent) alterResource(ctx context.Context, typ kmsg.ConfigResourceType, name string, changes []topicconfig.Change, replace, validateOnly bool) *alterError {
	if err := checkChanges(changes); err != nil {
		return err
	}
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		return a.alterTopicConfigs(ctx, name, changes, replace, validateOnly)
	case kmsg.ConfigResourceTypeBroker:
		if name != "" {
			if code, msg := a.checkBrokerName(name); code != nil {
				return &alterError{code, msg}
			}
		}
		return a.alterClusterConfigs(ctx, name != "", changes, replace, validateOnly)
	case kmsg.ConfigResourceTypeGroupConfig:
		return a.alterGroupConfigs(ctx, name, changes, replace, validateOnly)
	case kmsg.ConfigResourceTypeBrokerLogger:
		if !replace {
			var set []string
			for _, c := range changes {
				if c.Op != kmsg.IncrementalAlterConfigOpDelete {
					set = append(set, c.Name)
				}
			}
			if len(set) > 0 {
				return alterErr(kerr.InvalidConfig, "floe has no named loggers to set (%s): its log level is the --log-level flag", strings.Join(set, ", "))
			}
			return nil
		}
	case kmsg.ConfigResourceTypeClientMetrics:
		return alterErr(kerr.InvalidRequest, "floe has no client metrics subscriptions (KIP-714)")
	}
	return alterErr(kerr.InvalidRequest, "Unknown resource type %d", typ)
}

// checkChanges applies Kafka's request-level checks to one resource's
// changes: no name twice, no null value outside DELETE, known operations.
func checkChanges(changes []topicconfig.Change) *alterError {
	seen := make(map[string]bool, len(changes))
	var nulls []string
	for _, c := range changes {
		if seen[c.Name] {
			return alterErr(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[c.Name] = true
		if c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil {
			nulls = append(nulls, c.Name)
		}
	}
	if len(nulls) > 0 {
		return alterErr(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	for _, c := range changes {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete,
			kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
		default:
			return alterErr(kerr.InvalidRequest, "Unknown operations type %d", c.Op)
		}
	}
	return nil
}

// alterTopicConfigs changes a topic's configs in one store transaction.
func (a *Agent) alterTopicConfigs(ctx context.Context, topic string, changes []topicconfig.Change, replace, validateOnly bool) *alterError {
	if topic == "" {
		return alterErr(kerr.InvalidRequest, "Default topic resources are not allowed.")
	}
	if err := validTopicName(topic); err != nil {
		return alterErr(kerr.InvalidTopicException, "%s", err.Error())
	}
	// Values set outright are checked before the topic is looked up, as
	// Kafka validates before it checks existence.
	for _, c := range changes {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if why := topicconfig.Check(c.Name, *c.Value); why != "" {
				return alterErr(kerr.InvalidConfig, "%s", why)
			}
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if !topicconfig.IsList(c.Name) {
				return alterErr(kerr.InvalidConfig, "Can't %s to key %s because its type is not LIST.", opName(c.Op), c.Name)
			}
		}
	}
	unknown := func(err error) error {
		if errors.Is(err, metadata.ErrUnknownTopic) {
			return alterErr(kerr.UnknownTopicOrPartition, "Unable to find a topic named %s.", topic)
		}
		return err
	}
	return a.storedAlter(ctx, "topic", topic, changes, validateOnly, func(ctx context.Context) (map[string]string, error) {
		t, err := a.store.Topic(ctx, topic)
		return t.Configs, unknown(err)
	}, func(ctx context.Context, update func(map[string]string) (map[string]string, error)) error {
		defer a.topics.invalidate()
		return unknown(a.store.UpdateTopicConfigs(ctx, topic, update))
	}, func(cur map[string]string) (map[string]string, error) {
		next, why := topicconfig.ApplyTopic(cur, changes, replace)
		if why == "" {
			why = topicconfig.CheckSet(next)
		}
		if why != "" {
			return nil, alterErr(kerr.InvalidConfig, "%s", why)
		}
		return next, nil
	})
}

// alterClusterConfigs changes the cluster's dynamic broker configs in one
// store transaction (topicconfig.ApplyBroker checks them as Kafka does)
// and applies them on this agent at once; other agents and the
// compactors apply them within a heartbeat or a round. perBroker (a
// broker id named): floe keeps no per-broker values, so nothing is read
// or stored.
func (a *Agent) alterClusterConfigs(ctx context.Context, perBroker bool, changes []topicconfig.Change, replace, validateOnly bool) *alterError {
	update := func(cur map[string]string) (map[string]string, error) {
		next, code, msg := topicconfig.ApplyBroker(cur, changes, replace, perBroker, a.cfg.TopicDefaults)
		if code != nil {
			return nil, &alterError{code, msg}
		}
		return next, nil
	}
	if perBroker {
		if _, code, msg := topicconfig.ApplyBroker(nil, changes, replace, true, a.cfg.TopicDefaults); code != nil {
			return &alterError{code, msg}
		}
		return nil
	}
	return a.storedAlter(ctx, "cluster", "", changes, validateOnly, a.store.ClusterConfigs,
		func(ctx context.Context, update func(map[string]string) (map[string]string, error)) error {
			if err := a.store.UpdateClusterConfigs(ctx, update); err != nil {
				return err
			}
			if err := a.defaults.Refresh(ctx, a.store); err != nil {
				a.log.Warn("apply cluster configs failed", "err", err)
			}
			return nil
		}, update)
}

// storedAlter runs an alter's update on a resource's stored configs, in
// storeTimeout: with validateOnly on a copy of what read returns, else
// through write (one store transaction). The answer is nil, the
// *alterError the update or read/write returned, or the store's failure.
func (a *Agent) storedAlter(ctx context.Context, kind, name string, changes []topicconfig.Change, validateOnly bool,
	read func(context.Context) (map[string]string, error),
	write func(context.Context, func(map[string]string) (map[string]string, error)) error,
	update func(map[string]string) (map[string]string, error)) *alterError {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	var err error
	if validateOnly {
		var cur map[string]string
		if cur, err = read(ctx); err == nil {
			_, err = update(maps.Clone(cur))
		}
	} else {
		err = write(ctx, update)
	}
	var ae *alterError
	switch {
	case err == nil:
		if !validateOnly {
			a.log.Info(kind+" configs altered", kind, name, "changes", len(changes))
		}
		return nil
	case errors.As(err, &ae):
		return ae
	}
	code, msg := a.adminStoreError(ctx, "alter "+kind+" configs", name, err)
	return &alterError{code, msg}
}

func opName(op kmsg.IncrementalAlterConfigOp) string {
	switch op {
	case kmsg.IncrementalAlterConfigOpAppend:
		return "APPEND"
	case kmsg.IncrementalAlterConfigOpSubtract:
		return "SUBTRACT"
	}
	return op.String()
}
