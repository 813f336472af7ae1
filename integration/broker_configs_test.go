package integration

// Dynamic broker configs and features through franz-go's kadm, on two
// agents sharing PostgreSQL and MinIO: a cluster-wide message.max.bytes
// set through one agent is enforced by both within a heartbeat, described
// with source DYNAMIC_DEFAULT_BROKER_CONFIG on the cluster, on each broker
// and in a topic's synonyms, and removing it restores the static default;
// static broker configs are refused with Kafka's answer. ApiVersions
// (Kafka's DescribeFeatures) reports the same features on both agents,
// and UpdateFeatures refuses other levels.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBrokerConfigsAndFeatures(t *testing.T) {
	c := newCluster(t, "floe_broker_configs")
	agents := c.startAgents(t, 2)
	ctx := testContext(t, 3*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(agents[0].Addr, agents[1].Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ids := nodeIDs(t, ctx, []string{agents[0].Addr})
	nodes := []int32{ids[agents[0].Addr], ids[agents[1].Addr]}
	createTopic(t, ctx, cl, "dyn", 1, nil)

	// produce sends one batch of 50 small records (about 600 bytes) to
	// the topic through one agent, whatever leader Metadata names, as any
	// agent serves any partition.
	produce := func(node int32) int16 {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "dyn"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = makeBatch(50)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	// eventually waits until both agents answer want, within a few
	// heartbeats (--agent-ttl 3s: a heartbeat a second).
	eventually := func(what string, want *kerr.Error) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for _, n := range nodes {
			for {
				got := produce(n)
				if kerr.ErrorForCode(got) == want || (want == nil && got == 0) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: agent %d answers %v, want %v", what, n, kerr.ErrorForCode(got), want)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	eventually("static default", nil)

	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "message.max.bytes", Value: sp("100")},
		{Op: kadm.SetConfig, Name: "log.retention.hours", Value: sp("2")},
	})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("alter cluster configs: %+v %v", res, err)
	}
	eventually("dynamic message.max.bytes=100", kerr.MessageTooLarge)

	all, err := adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := all.On("", nil)
	if err != nil || len(cluster.Configs) != 2 {
		t.Fatalf("cluster configs %+v %v, want the 2 set", cluster, err)
	}
	for _, cfg := range cluster.Configs {
		if cfg.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
			t.Fatalf("cluster %s from %v", cfg.Key, cfg.Source)
		}
	}
	for _, n := range nodes {
		bc, err := adm.DescribeBrokerConfigs(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := bc.On(strconv.Itoa(int(n)), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range rc.Configs {
			if cfg.Key == "message.max.bytes" && (cfg.MaybeValue() != "100" || cfg.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig ||
				len(cfg.Synonyms) != 2 || cfg.Synonyms[1].Source != kmsg.ConfigSourceDefaultConfig) {
				t.Fatalf("agent %d message.max.bytes: %+v", n, cfg)
			}
		}
	}
	tc, err := adm.DescribeTopicConfigs(ctx, "dyn")
	if err != nil {
		t.Fatal(err)
	}
	trc, err := tc.On("dyn", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range trc.Configs {
		if cfg.Key == "retention.ms" && (cfg.MaybeValue() != "7200000" || cfg.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig ||
			len(cfg.Synonyms) == 0 || cfg.Synonyms[0].Key != "log.retention.hours") {
			t.Fatalf("topic retention.ms: %+v", cfg)
		}
	}

	// A static broker config, at the cluster and at a broker: Kafka's
	// answer, nothing stored.
	res, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "num.io.threads", Value: sp("4")}})
	if err != nil || !errors.Is(res[0].Err, kerr.InvalidRequest) || res[0].ErrMessage != "Cannot update these configs dynamically: Set(num.io.threads)" {
		t.Fatalf("static config: %+v %v", res, err)
	}
	res, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "message.max.bytes", Value: sp("5")}}, nodes[1])
	if err != nil || !errors.Is(res[0].Err, kerr.InvalidRequest) || !strings.Contains(res[0].ErrMessage, "Set(message.max.bytes)") {
		t.Fatalf("per-broker value: %+v %v", res, err)
	}

	// Removing the dynamic default restores the static one everywhere.
	res, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: "message.max.bytes"}, {Op: kadm.DeleteConfig, Name: "log.retention.hours"}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("delete cluster configs: %+v %v", res, err)
	}
	eventually("dynamic default removed", nil)

	// Features, as Kafka's Admin.describeFeatures reads them: ApiVersions.
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		v, ok := vs[n]
		if !ok || v.Err != nil {
			t.Fatalf("ApiVersions of %d: %+v", n, v)
		}
		got := map[string]int16{}
		for _, f := range v.Raw().FinalizedFeatures {
			got[f.Name] = f.MaxVersionLevel
		}
		if len(got) != 3 || got["metadata.version"] != 20 || got["group.version"] != 1 || got["share.version"] != 1 || v.Raw().FinalizedFeaturesEpoch != 22 {
			t.Fatalf("agent %d finalized features %v, epoch %d", n, got, v.Raw().FinalizedFeaturesEpoch)
		}
	}
	uf, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "metadata.version", MaxVersionLevel: 21, UpgradeType: 1})
	if err != nil || !errors.Is(uf["metadata.version"].Err, kerr.InvalidUpdateVersion) {
		t.Fatalf("metadata.version 21: %+v %v", uf, err)
	}
	uf, err = adm.UpdateFeatures(ctx, true, kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 1})
	if err != nil || uf.Error() != nil {
		t.Fatalf("group.version at its level, validate only: %+v %v", uf, err)
	}
	raw := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "transaction.version", 2, 1
	raw.FeatureUpdates = append(raw.FeatureUpdates, u)
	resp, err := raw.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorMessage == nil {
		t.Fatalf("transaction.version 2: code %d and no message", resp.ErrorCode)
	}
	if msg := *resp.ErrorMessage; !strings.HasPrefix(msg, "The update failed for all features since the following feature had an error: Invalid update version 2 for feature transaction.version. Local controller ") ||
		!strings.HasSuffix(msg, " does not support this feature.") {
		t.Fatalf("transaction.version 2: %q", msg)
	}
}
