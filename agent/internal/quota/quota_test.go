package quota

import (
	"testing"
	"time"

	"floe/metadata"
)

// TestQuotaPrecedence: each of Kafka's eight levels wins over those after
// it, per quota key, and names the sensor by the parts that matched.
func TestQuotaPrecedence(t *testing.T) {
	alice, app, def, none := metadata.Named("alice"), metadata.Named("app"), metadata.DefaultName, metadata.QuotaName{}
	levels := []metadata.QuotaEntity{
		{User: alice, ClientID: app},
		{User: alice, ClientID: def},
		{User: alice},
		{User: def, ClientID: app},
		{User: def, ClientID: def},
		{User: def},
		{ClientID: app},
		{ClientID: def},
	}
	// The sensor tags (user, client id) of each level for alice/app.
	tags := [][2]string{{"alice", "app"}, {"alice", "app"}, {"alice", ""}, {"alice", "app"}, {"alice", "app"}, {"alice", ""}, {"", "app"}, {"", "app"}}
	for first := range levels {
		var qs []metadata.ClientQuota
		for i := first; i < len(levels); i++ {
			qs = append(qs, metadata.ClientQuota{Entity: levels[i], Key: "producer_byte_rate", Value: float64(1000 * (i + 1))})
		}
		// A key set only at the last level does not hide the others'.
		qs = append(qs, metadata.ClientQuota{Entity: metadata.QuotaEntity{ClientID: def}, Key: "consumer_byte_rate", Value: 7})
		qc := NewConfig(1, 1, qs)
		bound, key, ok := qc.Resolve(Produce, "alice", "app")
		want := SensorKey{Kind: Produce, User: tags[first][0], Client: tags[first][1]}
		if !ok || bound != float64(1000*(first+1)) || key != want {
			t.Errorf("levels %d..: produce quota = %v %+v %v, want %d %+v", first, bound, key, ok, 1000*(first+1), want)
		}
		if bound, _, ok := qc.Resolve(Fetch, "alice", "app"); !ok || bound != 7 {
			t.Errorf("levels %d..: fetch quota = %v %v, want 7", first, bound, ok)
		}
		if _, _, ok := qc.Resolve(Request, "alice", "app"); ok {
			t.Errorf("levels %d..: a request quota where none is set", first)
		}
	}
	// Other users and client ids fall to the defaults, or to nothing.
	qc := NewConfig(1, 1, []metadata.ClientQuota{
		{Entity: metadata.QuotaEntity{User: alice, ClientID: app}, Key: "producer_byte_rate", Value: 1},
		{Entity: metadata.QuotaEntity{User: def}, Key: "producer_byte_rate", Value: 2},
	})
	for _, tc := range []struct {
		user, client string
		bound        float64
		key          SensorKey
	}{
		{"alice", "app", 1, SensorKey{Kind: Produce, User: "alice", Client: "app"}},
		{"alice", "other", 2, SensorKey{Kind: Produce, User: "alice"}},
		{"ANONYMOUS", "", 2, SensorKey{Kind: Produce, User: "ANONYMOUS"}},
	} {
		bound, key, ok := qc.Resolve(Produce, tc.user, tc.client)
		if !ok || bound != tc.bound || key != tc.key {
			t.Errorf("%s/%s: %v %+v %v, want %v %+v", tc.user, tc.client, bound, key, ok, tc.bound, tc.key)
		}
	}
	if _, _, ok := NewConfig(1, 1, []metadata.ClientQuota{{Entity: metadata.QuotaEntity{User: alice}, Key: "producer_byte_rate", Value: 1}}).
		Resolve(Produce, "bob", "app"); ok {
		t.Error("bob has alice's quota")
	}
	_ = none
}

// TestQuotaShare: byte rates are divided by the live agents, request and
// connection quotas are each agent's own.
func TestQuotaShare(t *testing.T) {
	qs := []metadata.ClientQuota{
		{Entity: metadata.QuotaEntity{ClientID: metadata.DefaultName}, Key: "producer_byte_rate", Value: 1 << 20},
		{Entity: metadata.QuotaEntity{ClientID: metadata.DefaultName}, Key: "consumer_byte_rate", Value: 3 << 20},
		{Entity: metadata.QuotaEntity{ClientID: metadata.DefaultName}, Key: "request_percentage", Value: 50},
		{Entity: metadata.QuotaEntity{IP: metadata.Named("::ffff:10.0.0.1")}, Key: "connection_creation_rate", Value: 5},
		{Entity: metadata.QuotaEntity{IP: metadata.DefaultName}, Key: "connection_creation_rate", Value: 9},
	}
	qc := NewConfig(1, 4, qs)
	for k, want := range map[Kind]float64{Produce: 1 << 18, Fetch: 3 << 18, Request: 50} {
		if bound, _, _ := qc.Resolve(k, "u", "c"); bound != want {
			t.Errorf("%s share over 4 agents = %v, want %v", Types[k], bound, want)
		}
	}
	if bound, key, ok := qc.ResolveIP("10.0.0.1"); !ok || bound != 5 || key.IP != "10.0.0.1" {
		t.Errorf("ip quota of 10.0.0.1 = %v %+v %v, want its own 5 (stored as ::ffff:10.0.0.1)", bound, key, ok)
	}
	if bound, key, ok := qc.ResolveIP("10.0.0.2"); !ok || bound != 9 || key.IP != "10.0.0.2" {
		t.Errorf("ip quota of 10.0.0.2 = %v %+v %v, want the default 9 in a sensor of its own", bound, key, ok)
	}
}

// TestQuotaRateMath: the rate is the sum over the samples divided by at
// least ten windows (Kafka's Rate), samples older than eleven windows are
// forgotten, and the throttle time is (rate-bound)/bound·window.
func TestQuotaRateMath(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var r sensor
	rate, window := r.record(1<<20, t0)
	if window != 10*time.Second || rate != float64(1<<20)/10 {
		t.Fatalf("first record: rate %v over %v, want 1 MiB/10 s over 10 s", rate, window)
	}
	// 10 MiB more within the first window: 11 MiB over 10.5 s.
	rate, window = r.record(10<<20, t0.Add(500*time.Millisecond))
	if window != 10500*time.Millisecond || rate != float64(11<<20)/10.5 {
		t.Fatalf("second record: rate %v over %v", rate, window)
	}
	bound := float64(1 << 20)
	if d := throttleTime(rate, bound, window); d != 500*time.Millisecond {
		t.Fatalf("throttle = %v, want (11/10.5-1)·10.5 s = 500 ms", d)
	}
	if d := throttleTime(bound, bound, window); d != 0 {
		t.Fatalf("throttle at the bound = %v, want 0", d)
	}
	// One record per second for 12 s: the window stops growing at 11
	// samples, the first ones fall out of it.
	var s sensor
	for i := range 13 {
		rate, window = s.record(100, t0.Add(time.Duration(i)*time.Second))
	}
	// Samples start at 2..12 s: the oldest began 10 s before the last.
	if window != 10*time.Second || rate != 1100.0/10 {
		t.Fatalf("steady: rate %v over %v, want 110/s over 10 s", rate, window)
	}
	// Idle for eleven windows: everything is forgotten.
	later := t0.Add(30 * time.Second)
	if !s.idle(later) {
		t.Fatal("sensor not idle after 18 s without records")
	}
	rate, window = s.record(50, later)
	if window != 10*time.Second || rate != 5 {
		t.Fatalf("after idling: rate %v over %v, want 5/s over 10 s", rate, window)
	}
	// The request quota's throttle is bounded by one window.
	var q Sensors
	key := SensorKey{Kind: Request, Client: "c"}
	if d := q.Record(key, 10, 10000, t0); d != Window {
		t.Fatalf("request throttle = %v, want bounded to %v", d, Window)
	}
}
