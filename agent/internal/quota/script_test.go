package quota

// The interpreter of the quota scripts in testdata (see
// docs/architecture.md, Tests).

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"floe/internal/scripttest"
	"floe/metadata"
)

// quotaScript holds the stored quotas, the config built from them, the
// sensors and a clock.
type quotaScript struct {
	stored  []metadata.ClientQuota
	agents  int
	qc      *Config
	sensors Sensors
	now     time.Time
}

// TestScripts runs the scripts in testdata. Commands:
//
//	set user=alice client=<default> producer_byte_rate=1024   store quotas of an entity
//	remove user=alice client=<default> producer_byte_rate     remove them
//	agents 4                                                  live agents sharing byte rates
//	resolve kind=produce user=alice client=app                the quota that applies, and its sensor
//	resolve-ip ip=10.0.0.1
//	record kind=produce user=alice client=app value=1024      charge a sensor: rate, window, throttle
//	advance 500ms / prune / sensors
func TestScripts(t *testing.T) {
	scripttest.Walk(t, "testdata", func(t *testing.T) func(*testing.T, *datadriven.TestData) string {
		s := &quotaScript{agents: 1, now: time.Unix(1000, 0)}
		s.qc = NewConfig(0, s.agents, nil)
		return s.run
	})
}

// entityName parses an entity part: absent, "<default>" or a name.
func entityName(t *testing.T, d *datadriven.TestData, key string) metadata.QuotaName {
	switch v := scripttest.Str(t, d, key, "\x00"); v {
	case "\x00":
		return metadata.QuotaName{}
	case "<default>":
		return metadata.DefaultName
	default:
		return metadata.Named(v)
	}
}

func kindOf(t *testing.T, d *datadriven.TestData) Kind {
	k := slices.Index(Types[:], scripttest.Str(t, d, "kind", ""))
	if k < 0 {
		d.Fatalf(t, "kind: want one of %v", Types)
	}
	return Kind(k)
}

// num prints a number in full, to a thousandth.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) }

func sensorName(k SensorKey) string {
	var parts []string
	for _, p := range [][2]string{{"user", k.User}, {"client", k.Client}, {"ip", k.IP}} {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+p[1])
		}
	}
	return Types[k.Kind] + "(" + strings.Join(parts, " ") + ")"
}

func (s *quotaScript) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "set", "remove":
		e := metadata.QuotaEntity{User: entityName(t, d, "user"), ClientID: entityName(t, d, "client"), IP: entityName(t, d, "ip")}
		for _, a := range d.CmdArgs {
			if a.Key == "user" || a.Key == "client" || a.Key == "ip" {
				continue
			}
			s.stored = slices.DeleteFunc(s.stored, func(q metadata.ClientQuota) bool { return q.Entity == e && q.Key == a.Key })
			if d.Cmd == "set" {
				s.stored = append(s.stored, metadata.ClientQuota{Entity: e, Key: a.Key, Value: scripttest.Float(t, d, a.Key, 0)})
			}
		}
		s.qc = NewConfig(s.qc.Version()+1, s.agents, s.stored)
		return "ok"
	case "agents":
		var n int
		fmt.Sscan(scripttest.Arg(d), &n)
		s.agents = n
		s.qc = s.qc.WithAgents(n)
		return fmt.Sprintf("sharing among %d", s.qc.Agents())
	case "resolve", "resolve-ip":
		scripttest.Known(t, d, "kind", "user", "client", "ip")
		var (
			bound float64
			key   SensorKey
			ok    bool
		)
		if d.Cmd == "resolve" {
			bound, key, ok = s.qc.Resolve(kindOf(t, d), scripttest.Str(t, d, "user", ""), scripttest.Str(t, d, "client", ""))
		} else {
			bound, key, ok = s.qc.ResolveIP(scripttest.Str(t, d, "ip", ""))
		}
		if !ok {
			return "none"
		}
		return num(bound) + " " + sensorName(key)
	case "record":
		scripttest.Known(t, d, "kind", "user", "client", "value")
		bound, key, ok := s.qc.Resolve(kindOf(t, d), scripttest.Str(t, d, "user", ""), scripttest.Str(t, d, "client", ""))
		if !ok {
			return "no quota"
		}
		throttle := s.sensors.Record(key, bound, scripttest.Float(t, d, "value", 0), s.now)
		sn := s.sensors.m[key]
		sn.mu.Lock()
		rate, window := sn.measureLocked(s.now)
		sn.mu.Unlock()
		return fmt.Sprintf("%s rate=%s/s over %s, bound %s: throttle %s", sensorName(key), num(rate), window, num(bound), throttle)
	case "advance":
		by, err := time.ParseDuration(scripttest.Arg(d))
		if err != nil {
			d.Fatalf(t, "advance: %v", err)
		}
		s.now = s.now.Add(by)
		return "ok"
	case "prune":
		s.sensors.Prune(s.now)
		fallthrough
	case "sensors":
		var keys []string
		for k := range s.sensors.m {
			keys = append(keys, sensorName(k))
		}
		slices.Sort(keys)
		if len(keys) == 0 {
			return "no sensors"
		}
		return strings.Join(keys, "\n")
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	}
}
