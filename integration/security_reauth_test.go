package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestSecurityReauthentication: with --sasl-session-lifetime (KIP-368,
// connections.max.reauth.ms) franz-go, sarama and kafkajs re-authenticate
// on their connections and keep producing through several lifetimes; floe
// cuts no connection for an expired session. Each client has a mechanism
// of its own, so that floe's "SASL authenticated" lines can be counted per
// client. (kcat is left out: Debian's librdkafka 2.0.2 does not implement
// KIP-368 — a kcat -P that waits past a 2 s session is disconnected at its
// next request, as Kafka disconnects it; later librdkafka releases
// re-authenticate.)
func TestSecurityReauthentication(t *testing.T) {
	const lifetime, span, every = 2 * time.Second, 5 * time.Second, 250 * time.Millisecond
	data := t.TempDir()
	floeUserAdd(t, "sqlite://"+filepath.Join(data, "meta.db"), secUser, secPass)
	plaintext, sasl := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startFloe(t, "dev", "--data-dir", data,
		"--listeners", "PLAINTEXT://"+plaintext+",SASL_PLAINTEXT://"+sasl,
		"--sasl-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN", "--sasl-session-lifetime", lifetime.String(),
		"--log-level", "debug")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("floe log:\n%s", p.Log())
		}
	})
	admin := newKgo(t, kgo.SeedBrokers(plaintext))
	ctx := testContext(t, time.Minute)
	n := int(span / every)
	node, dir, _ := cliKafkajsSetup(t)

	t.Run("clients", func(t *testing.T) {
		t.Run("franz-go", func(t *testing.T) {
			t.Parallel()
			topic := "reauth-franz"
			createTopic(t, ctx, admin, topic, 1, nil)
			cl := newKgo(t, kgo.SeedBrokers(sasl), kgo.DefaultProduceTopic(topic),
				kgo.SASL(scram.Auth{User: secUser, Pass: secPass}.AsSha256Mechanism()))
			for i := range n {
				if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
					t.Fatalf("produce %d: %v", i, err)
				}
				time.Sleep(every)
			}
		})
		t.Run("sarama", func(t *testing.T) {
			t.Parallel()
			topic := "reauth-sarama"
			createTopic(t, ctx, admin, topic, 1, nil)
			cfg := saramaSecConfig(nil)
			saramaSASL(cfg, sarama.SASLTypeSCRAMSHA512, sarama.SASLHandshakeV1, secUser, secPass)
			pr, err := sarama.NewSyncProducer([]string{sasl}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			for i := range n {
				if _, _, err := pr.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
					t.Fatalf("produce %d: %v", i, err)
				}
				time.Sleep(every)
			}
		})
		t.Run("kafkajs", func(t *testing.T) {
			t.Parallel()
			topic := "reauth-kafkajs"
			createTopic(t, ctx, admin, topic, 1, nil)
			out := runSecurityJS(t, ctx, node, dir, jsCase{Brokers: []string{sasl},
				SASL:  map[string]string{"mechanism": "plain", "username": secUser, "password": secPass},
				Topic: topic, Tag: "reauth", N: n, EveryMs: int(every / time.Millisecond)})
			secCheck(t, "security.js", out, []string{fmt.Sprintf("produced %d", n)})
		})
	})

	log := p.Log()
	if strings.Contains(log, "SASL session expired without re-authentication") {
		t.Error("floe closed a connection whose session expired: a client did not re-authenticate")
	}
	// A client's connections authenticate once each, then again every
	// lifetime or sooner: over span, at least span/lifetime more times.
	for client, mech := range map[string]string{"franz-go": "SCRAM-SHA-256", "sarama": "SCRAM-SHA-512", "kafkajs": "PLAIN"} {
		auths := 0
		for l := range strings.Lines(log) {
			if strings.Contains(l, `msg="SASL authenticated"`) && strings.Contains(l, "mechanism="+mech+" ") {
				auths++
			}
		}
		t.Logf("%s (%s): %d authentications in %s with a %s session", client, mech, auths, span, lifetime)
		if auths < 1+int(span/lifetime) {
			t.Errorf("%s: %d authentications, want re-authentications", client, auths)
		}
	}
}
