package integration

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"floe/metadata/pgtest"
	"floe/storage/miniotest"
)

// cluster is a real PostgreSQL and a real MinIO shared by floe agents.
type cluster struct {
	metaURL   string
	bucketURL string
	env       []string
}

func newCluster(t *testing.T, name string) *cluster { return newClusterTB(t, name) }

func newClusterTB(t testing.TB, name string) *cluster {
	pg := pgtest.Start(t)
	mi := miniotest.Start(t)
	return &cluster{
		metaURL:   pg.CreateDatabase(t, name),
		bucketURL: mi.URL(mi.NewBucket(t, strings.ReplaceAll(name, "_", "-"))), // S3 names allow no '_'
		env:       mi.Env(),
	}
}

// startCompactor runs `floe compactor` on the cluster's stores with args
// after the stores and its HTTP listener.
func (c *cluster) startCompactor(t testing.TB, args ...string) *proc {
	p := &proc{t: t, env: c.env}
	p.HTTPAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p.args = append([]string{"compactor", "--metadata", c.metaURL, "--bucket", c.bucketURL, "--http-addr", p.HTTPAddr}, args...)
	p.start()
	t.Cleanup(p.Stop)
	return p
}

func (c *cluster) startAgent(t testing.TB, extra ...string) *proc {
	args := append([]string{"agent", "--metadata", c.metaURL, "--bucket", c.bucketURL,
		"--flush-interval", "20ms", "--agent-ttl", "3s"}, extra...)
	return startFloeEnv(t, c.env, args...)
}

// startAgents starts n agents with the same arguments and returns once each
// of them lists all n in Metadata. An agent learns of its peers at its next
// heartbeat; a client bootstrapped from it before then knows that agent
// alone until its next metadata refresh (franz-go: up to 5 minutes), and
// has nowhere to go if that agent dies. Tests that kill an agent start from
// a settled cluster, as a client of a long-running one would. The agents'
// logs are printed if the test fails.
func (c *cluster) startAgents(t testing.TB, n int, extra ...string) []*proc {
	t.Helper()
	agents := make([]*proc, n)
	for i := range agents {
		agents[i] = c.startAgent(t, extra...)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, a := range agents {
				t.Logf("agent %d (%s) log:\n%s", i, a.Addr, a.Log())
			}
		}
	})
	ctx := testContext(t, 30*time.Second)
	for _, a := range agents {
		for {
			ids := nodeIDs(t, ctx, []string{a.Addr})
			if len(ids) == n && !slices.ContainsFunc(agents, func(p *proc) bool { _, ok := ids[p.Addr]; return !ok }) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("agent %s lists brokers %v, want all %d agents", a.Addr, ids, n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return agents
}

// TestAgentsOnPostgresAndMinIO runs two agents on shared PostgreSQL and MinIO:
// records produced through one are consumed through the other; both are
// brokers in Metadata; kill -9 of one while producing loses no acknowledged
// record.
func TestAgentsOnPostgresAndMinIO(t *testing.T) {
	c := newCluster(t, "floe_agents")
	ctx := testContext(t, 10*time.Minute)

	// Produce through A alone.
	a := c.startAgent(t)
	clA, err := kgo.NewClient(kgo.SeedBrokers(a.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	if err != nil {
		t.Fatal(err)
	}
	createTopic(t, ctx, clA, "through-a", 8, nil)
	recs := genRecords(7, "through-a", 8, 20_000)
	produceAll(t, ctx, clA, recs)
	clA.Close()

	// Both listed; then consume through B after A is gone.
	b := c.startAgent(t)
	adm, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	md, err := kadm.NewClient(adm).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, br := range md.Brokers {
		addrs = append(addrs, net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port))))
	}
	sort.Strings(addrs)
	want := []string{a.Addr, b.Addr}
	sort.Strings(want)
	if len(addrs) != 2 || addrs[0] != want[0] || addrs[1] != want[1] {
		t.Fatalf("brokers in Metadata = %v, want %v", addrs, want)
	}
	a.Stop()
	verifyRecords(t, recs, consumeN(t, ctx, []string{b.Addr}, "through-a", len(recs)))
	checkListOffsets(t, ctx, adm, "through-a", 8, recs)

	// kill -9 one agent while producing through both.
	a = c.startAgent(t)
	createTopic(t, ctx, adm, "kill", 16, nil)
	pcl, err := kgo.NewClient(kgo.SeedBrokers(a.Addr, b.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	krecs := genRecords(8, "kill", 16, 30_000)
	var acked atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ackedRecs []*kgo.Record
	var produceErr error
	wg.Add(len(krecs))
	for i, r := range krecs {
		if i == len(krecs)/3 {
			// Wait until a third is acknowledged, then kill A mid-stream.
			for acked.Load() < int64(len(krecs)/4) && ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
			a.Kill()
			t.Logf("killed agent A after %d acknowledged records", acked.Load())
		}
		pcl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if produceErr == nil {
					produceErr = err
				}
				return
			}
			acked.Add(1)
			ackedRecs = append(ackedRecs, r)
		})
	}
	wg.Wait()
	if produceErr != nil {
		t.Fatalf("producer did not finish through the surviving agent: %v", produceErr)
	}

	// Every acknowledged record is readable through B, at its offset.
	end := 0
	// Until the survivor's view drops A (its agent TTL), Metadata still
	// names A as the leader of some partitions, and a request sharded to
	// A fails to dial, as with a Kafka broker before the controller fences
	// it. The producer may finish within that window: retry.
	var offs kadm.ListedOffsets
	for {
		offs, err = kadm.NewClient(adm).ListEndOffsets(ctx, "kill")
		if err == nil {
			err = offs.Error()
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		t.Logf("list end offsets: %v (retrying)", err)
		time.Sleep(200 * time.Millisecond)
	}
	offs.Each(func(o kadm.ListedOffset) { end += int(o.Offset) })
	consumed := consumeN(t, ctx, []string{b.Addr}, "kill", end)
	for p, rs := range consumed {
		for i, r := range rs {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: offsets not dense: index %d has offset %d", p, i, r.Offset)
			}
		}
	}
	for _, r := range ackedRecs {
		rs := consumed[r.Partition]
		if r.Offset >= int64(len(rs)) {
			t.Fatalf("acknowledged record %d/%d is missing", r.Partition, r.Offset)
		}
		if msg := recordDiff(r, rs[r.Offset]); msg != "" {
			t.Fatalf("acknowledged record %d/%d: %s", r.Partition, r.Offset, msg)
		}
	}
	t.Logf("%d records acknowledged, %d stored (retries after the kill may store a record twice)", len(ackedRecs), end)
}
