package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/internal/peercache"
	"floe/metadata/sqlite"
	"floe/storage"
	"floe/storage/mem"
)

type objRange struct {
	key            string
	offset, length int64
}

// rangeCounter counts the GETs that reach the shared bucket, by range.
type rangeCounter struct {
	storage.Bucket
	mu     sync.Mutex
	gets   int
	ranges map[objRange]int
}

func newRangeCounter() *rangeCounter {
	return &rangeCounter{Bucket: mem.New(), ranges: map[objRange]int{}}
}

func (b *rangeCounter) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	b.mu.Lock()
	b.gets++
	b.ranges[objRange{key, offset, length}]++
	b.mu.Unlock()
	return b.Bucket.GetRange(ctx, key, offset, length)
}

func (b *rangeCounter) counts() (gets, distinct int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gets, len(b.ranges)
}

// newZoneAgent starts an agent of zone z1 over the SQLite file path and the
// bucket, both shared by the agents of one test, with an HTTP listener and
// a fast heartbeat; stopped at cleanup.
func newZoneAgent(t *testing.T, path string, bucket storage.Bucket, opts ...func(*Config)) *Agent {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DevConfig()
	cfg.KafkaAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Zone = "z1"
	cfg.HeartbeatInterval = 50 * time.Millisecond
	cfg.DefaultPartitions = 6
	for _, o := range opts {
		o(&cfg)
	}
	return startAgent(t, cfg, store, bucket, nil, func() { store.Close() })
}

// waitRing waits until every agent's ring (live agents of its zone with an
// HTTP address) holds exactly want, by agent id.
func waitRing(t *testing.T, agents []*Agent, want ...*Agent) {
	t.Helper()
	ids := map[string]bool{}
	for _, w := range want {
		ids[w.id] = true
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, a := range agents {
		for {
			n, ok := 0, true
			for _, l := range a.liveAgents() {
				if l.Zone == a.cfg.Zone && l.HTTPAddr != "" {
					n++
					ok = ok && ids[l.ID]
				}
			}
			if ok && n == len(ids) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("agent %d sees ring %+v, want %d agents", a.NodeID(), a.liveAgents(), len(ids))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// produceZone writes rounds of records to every partition of topic through
// a, one ProduceSync (so at least one object) per round, and returns the
// values by partition.
func produceZone(t *testing.T, a *Agent, topic string, partitions int32, rounds, perRound int) map[int32][]string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.KafkaAddr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic %s: %v %+v", topic, err, resp)
	}
	want := map[int32][]string{}
	for r := range rounds {
		var recs []*kgo.Record
		for p := range partitions {
			for i := range perRound {
				v := fmt.Sprintf("%s/%d/%d/%d", topic, p, r, i)
				want[p] = append(want[p], v)
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
			}
		}
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

// fetchFrom reads every partition of topic from offset 0 to its high
// watermark with Fetch requests sent to agent a alone (whatever leader
// Metadata names), and checks it gets exactly want; a partition error in
// any answer fails the test.
func fetchFrom(t *testing.T, a *Agent, topic string, want map[int32][]string) {
	t.Helper()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	br := cl.Broker(int(a.NodeID()))
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata of %s: %v %+v", topic, err, mresp)
	}
	topicID := mresp.Topics[0].TopicID
	next := map[int32]int64{}
	got := map[int32][]string{}
	for {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = -1, 256<<10, 1, 100
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		for p := range want {
			if next[p] < int64(len(want[p])) {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, next[p], 64<<10
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		if len(rt.Partitions) == 0 {
			break
		}
		req.Topics = append(req.Topics, rt)
		resp, err := br.RetriableRequest(ctx, req)
		if err != nil {
			t.Fatalf("fetch from agent %d: %v", a.NodeID(), err)
		}
		fr := resp.(*kmsg.FetchResponse)
		if fr.ErrorCode != 0 {
			t.Fatalf("fetch from agent %d: %v", a.NodeID(), kerr.ErrorForCode(fr.ErrorCode))
		}
		for _, ft := range fr.Topics {
			for i := range ft.Partitions {
				fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic,
					Partition: ft.Partitions[i].Partition, Offset: next[ft.Partitions[i].Partition]},
					&ft.Partitions[i], kgo.DefaultDecompressor(), nil)
				if fp.Err != nil {
					t.Fatalf("fetch from agent %d, partition %d: %v", a.NodeID(), fp.Partition, fp.Err)
				}
				for _, r := range fp.Records {
					if r.Offset != next[fp.Partition] {
						t.Fatalf("partition %d: offset %d, want %d", fp.Partition, r.Offset, next[fp.Partition])
					}
					got[fp.Partition] = append(got[fp.Partition], string(r.Value))
					next[fp.Partition]++
				}
			}
		}
	}
	for p, w := range want {
		if fmt.Sprint(got[p]) != fmt.Sprint(w) {
			t.Fatalf("agent %d, partition %d: %d records, want %d (first %q)", a.NodeID(), p, len(got[p]), len(w), got[p][:min(1, len(got[p]))])
		}
	}
}

func peerCounts(t *testing.T, a *Agent) (reads, errs, served, saved float64) {
	t.Helper()
	return a.peers.Counts()
}

// TestReadCacheRingFollowsAgents: in-process agents of one zone agree on
// every range's owner; an agent that joins takes about 1/n of the ranges
// (only from the others: none moves between old members); an agent of
// another zone or without an HTTP listener owns none; one that leaves
// gives its ranges back.
func TestReadCacheRingFollowsAgents(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "meta.db")
	bucket := mem.New()
	a := newZoneAgent(t, path, bucket)
	b := newZoneAgent(t, path, bucket)
	other := newZoneAgent(t, path, bucket, func(c *Config) { c.Zone = "z2" })
	noHTTP := newZoneAgent(t, path, bucket, func(c *Config) { c.HTTPAddr = "" })
	waitRing(t, []*Agent{a, b, noHTTP}, a, b)
	waitRing(t, []*Agent{other}, other)

	keys := make([]string, 3000)
	owners := func(ag *Agent) []string {
		out := make([]string, len(keys))
		for i, k := range keys {
			o, ok := ag.peers.Owner(k, 0, 100)
			if !ok {
				t.Fatalf("agent %d: empty ring", ag.NodeID())
			}
			out[i] = o.ID
		}
		return out
	}
	for i := range keys {
		keys[i] = storage.NewObjectKey()
	}
	before := owners(a)
	if fmt.Sprint(owners(b)) != fmt.Sprint(before) || fmt.Sprint(owners(noHTTP)) != fmt.Sprint(before) {
		t.Fatal("agents of one zone disagree on owners")
	}
	for _, o := range owners(other) {
		if o != other.id {
			t.Fatalf("agent of zone z2 sees owner %s", o)
		}
	}

	c := newZoneAgent(t, path, bucket)
	waitRing(t, []*Agent{a, b, c, noHTTP}, a, b, c)
	after := owners(a)
	moved := 0
	for i := range keys {
		if before[i] != after[i] {
			moved++
			if after[i] != c.id {
				t.Fatalf("range moved from %s to %s, not to the joining agent", before[i], after[i])
			}
		}
	}
	// Binomial(3000, 1/3): 1000 ± 26 (1 sd).
	if moved < 800 || moved > 1200 {
		t.Fatalf("joining agent took %d of %d ranges, want about %d", moved, len(keys), len(keys)/3)
	}
	for _, ag := range []*Agent{b, c, noHTTP} {
		if fmt.Sprint(owners(ag)) != fmt.Sprint(after) {
			t.Fatalf("agent %d disagrees on owners after the join", ag.NodeID())
		}
	}

	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Close(cctx); err != nil {
		t.Fatal(err)
	}
	waitRing(t, []*Agent{a, b}, a, b)
	if fmt.Sprint(owners(a)) != fmt.Sprint(before) {
		t.Fatal("ranges did not go back to their owners once the joiner left")
	}
}

// TestReadCacheOneGetPerRange: three agents of a zone each fetch every
// record of a topic, each with Fetch requests sent to it alone; every range
// is read from the bucket exactly once over the three, the others reading
// it through its owner.
func TestReadCacheOneGetPerRange(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "meta.db")
	bucket := newRangeCounter()
	agents := []*Agent{newZoneAgent(t, path, bucket), newZoneAgent(t, path, bucket), newZoneAgent(t, path, bucket)}
	waitRing(t, agents, agents...)
	want := produceZone(t, agents[0], "shared", 6, 8, 50)

	for _, a := range agents {
		fetchFrom(t, a, "shared", want)
	}
	gets, distinct := bucket.counts()
	if distinct < 8 {
		t.Fatalf("%d distinct ranges read; the test wants several objects", distinct)
	}
	if gets != distinct {
		t.Fatalf("%d GETs of %d distinct ranges, want one each", gets, distinct)
	}
	var reads, errs, served, saved float64
	for _, a := range agents {
		r, e, sv, sa := peerCounts(t, a)
		reads, errs, served, saved = reads+r, errs+e, served+sv, saved+sa
	}
	// Each agent misses each range once in its own cache, and reads it
	// through its owner unless it is that owner: 2 peer reads per range.
	if reads != float64(2*distinct) || served != reads || errs != 0 {
		t.Fatalf("peer reads %v, served %v, errors %v; want %d, %d, 0", reads, served, errs, 2*distinct, 2*distinct)
	}
	// The first agent's peer reads made its owners GET; every later one
	// found the range cached at its owner.
	if saved < float64(distinct) {
		t.Fatalf("GETs saved %v, want at least %d of %v ranges served", saved, distinct, served)
	}
}

// TestReadCacheDeadOwner: an owner still listed in the registry whose HTTP
// listener is gone (killed, partitioned) costs one peer error and one
// direct GET per range it owns, never a failed fetch; the ranges of the
// live owner are still read through it.
func TestReadCacheDeadOwner(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "meta.db")
	bucket := newRangeCounter()
	agents := []*Agent{newZoneAgent(t, path, bucket), newZoneAgent(t, path, bucket), newZoneAgent(t, path, bucket)}
	waitRing(t, agents, agents...)
	want := produceZone(t, agents[0], "dead", 6, 8, 50)

	reader, live, dead := agents[0], agents[1], agents[2]
	if err := dead.httpSv.Close(); err != nil {
		t.Fatal(err)
	}
	fetchFrom(t, reader, "dead", want)

	byOwner := map[string]int{}
	bucket.mu.Lock()
	gets, distinct := bucket.gets, len(bucket.ranges)
	for r := range bucket.ranges {
		o, _ := reader.peers.Owner(r.key, r.offset, r.length)
		byOwner[o.ID]++
	}
	bucket.mu.Unlock()
	if gets != distinct {
		t.Fatalf("%d GETs of %d distinct ranges, want one each", gets, distinct)
	}
	reads, errs, _, _ := peerCounts(t, reader)
	if byOwner[dead.id] == 0 || byOwner[live.id] == 0 {
		t.Fatalf("ranges by owner %v: the test wants some owned by each agent", byOwner)
	}
	if errs != float64(byOwner[dead.id]) || reads != float64(byOwner[live.id]) {
		t.Fatalf("peer errors %v, peer reads %v; want %d (the dead agent's ranges) and %d (the live one's)",
			errs, reads, byOwner[dead.id], byOwner[live.id])
	}
	if _, _, served, _ := peerCounts(t, live); served != reads {
		t.Fatalf("live owner served %v ranges, reader read %v through peers", served, reads)
	}
}

// TestServeRangeRefusesBadInput: the internal range endpoint answers 400
// to bad or missing parameters and keys that name no floe object, 404 to
// an unknown object, and serves a good range byte for byte.
func TestServeRangeRefusesBadInput(t *testing.T) {
	t.Parallel()
	bucket := mem.New()
	key := storage.NewObjectKey()
	obj := bytes.Repeat([]byte("0123456789"), 100)
	if err := bucket.Put(context.Background(), key, obj); err != nil {
		t.Fatal(err)
	}
	a := newZoneAgent(t, filepath.Join(t.TempDir(), "meta.db"), bucket)
	get := func(q string) (int, []byte) {
		t.Helper()
		resp, err := http.Get("http://" + a.HTTPAddr() + peercache.Path + "?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	q := func(k, off, n string) string {
		return url.Values{"key": {k}, "offset": {off}, "length": {n}}.Encode()
	}
	for _, c := range []struct {
		name, query string
		status      int
	}{
		{"no parameters", "", 400},
		{"no key", "offset=0&length=10", 400},
		{"no offset", url.Values{"key": {key}, "length": {"10"}}.Encode(), 400},
		{"no length", url.Values{"key": {key}, "offset": {"0"}}.Encode(), 400},
		{"path traversal", q("../../etc/passwd", "0", "10"), 400},
		{"not an object key", q("iceberg/metadata.json", "0", "10"), 400},
		{"negative offset", q(key, "-1", "10"), 400},
		{"offset not a number", q(key, "x", "10"), 400},
		{"offset overflow", q(key, "99999999999999999999", "10"), 400},
		{"zero length", q(key, "0", "0"), 400},
		{"negative length", q(key, "0", "-1"), 400},
		{"length over the max", q(key, "0", strconv.Itoa(peercache.MaxRange+1)), 400},
		{"unknown object", q(storage.NewObjectKey(), "0", "10"), 404},
	} {
		if status, body := get(c.query); status != c.status {
			t.Errorf("%s: status %d (%q), want %d", c.name, status, body, c.status)
		}
	}
	if status, body := get(q(key, "10", "25")); status != 200 || !bytes.Equal(body, obj[10:35]) {
		t.Fatalf("good range: status %d, %q", status, body)
	}
	// Past the end: the bytes that exist, as Bucket.GetRange returns them.
	if status, body := get(q(key, "990", "100")); status != 200 || !bytes.Equal(body, obj[990:]) {
		t.Fatalf("range past the end: status %d, %q", status, body)
	}
	resp, err := http.Post("http://"+a.HTTPAddr()+peercache.Path+"?"+q(key, "0", "10"), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: status %d", resp.StatusCode)
	}
	_, _, served, saved := peerCounts(t, a)
	if served != 2 || saved != 0 {
		t.Fatalf("served %v, saved %v; want 2 and 0 (distinct ranges, each a GET)", served, saved)
	}
}

// TestReadCachePeersOff: an agent with ReadCachePeers off GETs every range
// it misses itself, and still serves the ranges it owns to an agent that
// reads through peers (from its cache, with no second GET).
func TestReadCachePeersOff(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "meta.db")
	bucket := newRangeCounter()
	on := newZoneAgent(t, path, bucket)
	off := newZoneAgent(t, path, bucket, func(c *Config) { c.ReadCachePeers = false })
	waitRing(t, []*Agent{on, off}, on, off)
	want := produceZone(t, on, "off", 6, 8, 50)

	fetchFrom(t, off, "off", want)
	gets, distinct := bucket.counts()
	if reads, _, _, _ := peerCounts(t, off); gets != distinct || reads != 0 {
		t.Fatalf("agent with peers off: %d GETs of %d ranges, %v peer reads; want one GET each, none through peers", gets, distinct, reads)
	}
	fetchFrom(t, on, "off", want)
	ownedByOff := 0
	for r := range bucket.ranges {
		if o, _ := on.peers.Owner(r.key, r.offset, r.length); o.ID == off.id {
			ownedByOff++
		}
	}
	gets2, _ := bucket.counts()
	_, _, served, saved := peerCounts(t, off)
	if ownedByOff == 0 || served != float64(ownedByOff) || saved != served || gets2-gets != distinct-ownedByOff {
		t.Fatalf("off served %v (saved %v) of the %d ranges it owns; the other agent made %d GETs, want %d",
			served, saved, ownedByOff, gets2-gets, distinct-ownedByOff)
	}
}

// TestAdvertiseHTTPAddr: the registered HTTP address is the advertised
// Kafka host with the HTTP listener's port, or AdvertiseHTTPAddr; none
// without an HTTP listener; a malformed one fails Start.
func TestAdvertiseHTTPAddr(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "meta.db")
	bucket := mem.New()
	def := newZoneAgent(t, path, bucket)
	if want := "127.0.0.1:" + def.HTTPAddr()[strings.LastIndexByte(def.HTTPAddr(), ':')+1:]; def.self.HTTPAddr != want {
		t.Fatalf("default HTTP address %q, want %q", def.self.HTTPAddr, want)
	}
	set := newZoneAgent(t, path, bucket, func(c *Config) { c.AdvertiseHTTPAddr = "agent-2.floe.svc:18080" })
	if set.self.HTTPAddr != "agent-2.floe.svc:18080" {
		t.Fatalf("HTTP address %q, want the one given", set.self.HTTPAddr)
	}
	none := newZoneAgent(t, path, bucket, func(c *Config) { c.HTTPAddr, c.AdvertiseHTTPAddr = "", "ignored:1" })
	if none.self.HTTPAddr != "" {
		t.Fatalf("agent without HTTP listener registered %q", none.self.HTTPAddr)
	}
	for _, bad := range []string{"no-port", "host:0", ":8080", "host:http"} {
		store, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		cfg := DevConfig()
		cfg.KafkaAddr, cfg.HTTPAddr, cfg.AdvertiseHTTPAddr = "127.0.0.1:0", "127.0.0.1:0", bad
		if err := New(cfg, store, bucket, nil).Start(context.Background()); err == nil || !strings.Contains(err.Error(), "advertise http") {
			t.Errorf("AdvertiseHTTPAddr %q: Start: %v, want an advertise http address error", bad, err)
		}
		store.Close()
	}
}

// securedZone gives an agent a SASL listener beside its plaintext one:
// its range endpoint then serves signed peer requests only.
func securedZone(c *Config) {
	c.Listeners = []Listener{{Name: "PLAINTEXT", Protocol: ProtocolPlaintext, Addr: "127.0.0.1:0"},
		{Name: "SASL_PLAINTEXT", Protocol: ProtocolSASLPlaintext, Addr: "127.0.0.1:0"}}
	c.Security.SASLMechanisms = []string{ScramSHA512}
}

// TestReadCacheSecuredAgentsAuthenticate: agents with a secured listener
// share their caches too, each range still read once over the zone, but
// their range endpoint serves only requests signed with the cluster's
// peer secret: unsigned, tampered and stale requests get 401 and no byte.
func TestReadCacheSecuredAgentsAuthenticate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "meta.db")
	bucket := newRangeCounter()
	agents := []*Agent{newZoneAgent(t, path, bucket, securedZone), newZoneAgent(t, path, bucket, securedZone)}
	waitRing(t, agents, agents...)
	if agents[0].signer.Secret == nil || string(agents[0].signer.Secret) != string(agents[1].signer.Secret) {
		t.Fatal("the agents do not share one peer secret")
	}
	want := produceZone(t, agents[0], "secured", 6, 6, 40)
	for _, a := range agents {
		fetchFrom(t, a, "secured", want)
	}
	gets, distinct := bucket.counts()
	if gets != distinct {
		t.Fatalf("%d GETs of %d distinct ranges, want one each", gets, distinct)
	}
	var reads, errs float64
	for _, a := range agents {
		r, e, _, _ := peerCounts(t, a)
		reads, errs = reads+r, errs+e
	}
	if reads == 0 || errs != 0 {
		t.Fatalf("peer reads %v, errors %v: want signed reads through peers, none refused", reads, errs)
	}

	owner := agents[0]
	key := storage.NewObjectKey()
	if err := owner.bucket.Put(context.Background(), key, []byte("records")); err != nil {
		t.Fatal(err)
	}
	get := func(sign func(*http.Request)) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+owner.HTTPAddr()+peercache.Path+"?"+
			url.Values{"key": {key}, "offset": {"0"}, "length": {"7"}}.Encode(), nil)
		if sign != nil {
			sign(req)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	peer := agents[1]
	for _, tc := range []struct {
		what string
		sign func(*http.Request)
		want int
	}{
		{"unsigned", nil, http.StatusUnauthorized},
		{"signed for another range", func(r *http.Request) { peer.signer.Sign(r, key, 0, 6) }, http.StatusUnauthorized},
		{"signed with another secret", func(r *http.Request) {
			(&peercache.Signer{ID: peer.id, Secret: []byte("guess")}).Sign(r, key, 0, 7)
		}, http.StatusUnauthorized},
		{"signed", func(r *http.Request) { peer.signer.Sign(r, key, 0, 7) }, http.StatusOK},
	} {
		code, body := get(tc.sign)
		if code != tc.want || (code != http.StatusOK && strings.Contains(body, "records")) || (code == http.StatusOK && body != "records") {
			t.Errorf("%s: %d %q, want %d", tc.what, code, body, tc.want)
		}
	}
}
