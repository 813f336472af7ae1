package sasl

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/xdg-go/scram"

	"floe/internal/testpki"
	"floe/metadata"
)

// users is a credential store of SCRAM credentials in memory.
type users map[[2]string]metadata.ScramCredential

func (u users) ScramCredential(_ context.Context, user, mechanism string) (metadata.ScramCredential, error) {
	c, ok := u[[2]string{user, mechanism}]
	if !ok {
		return c, metadata.ErrNotFound
	}
	return c, nil
}

func (u users) add(t *testing.T, user, password string) {
	t.Helper()
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		c, err := NewScramCredential(user, m, password, 4096)
		if err != nil {
			t.Fatal(err)
		}
		u[[2]string{user, m}] = c
	}
}

// run drives an exchange with the client's messages until done or failed.
func run(t *testing.T, ex Exchange, client func(challenge string) (string, error)) (*Identity, error) {
	t.Helper()
	challenge := ""
	for range 4 {
		msg, err := client(challenge)
		if err != nil {
			return nil, err
		}
		answer, done, err := ex.Step(context.Background(), []byte(msg))
		if err != nil {
			return nil, err
		}
		if done {
			return ex.Identity(), nil
		}
		challenge = string(answer)
	}
	t.Fatal("exchange did not end in 4 steps")
	return nil, nil
}

func TestScram(t *testing.T) {
	store := users{}
	store.add(t, "alice", "secret")
	for _, tc := range []struct {
		mech     string
		hash     scram.HashGeneratorFcn
		password string
		ok       bool
	}{
		{ScramSHA256, scram.SHA256, "secret", true},
		{ScramSHA512, scram.SHA512, "secret", true},
		{ScramSHA256, scram.SHA256, "wrong", false},
	} {
		cl, err := tc.hash.NewClient("alice", tc.password, "")
		if err != nil {
			t.Fatal(err)
		}
		conv := cl.NewConversation()
		ex, err := NewExchange(tc.mech, store, nil)
		if err != nil {
			t.Fatal(err)
		}
		id, err := run(t, ex, conv.Step)
		if tc.ok {
			if err != nil || id.Principal != "User:alice" {
				t.Fatalf("%s: %+v, %v", tc.mech, id, err)
			}
			continue
		}
		var af AuthFailed
		if !errors.As(err, &af) || !strings.Contains(err.Error(), "invalid credentials with SASL mechanism "+tc.mech) {
			t.Fatalf("%s with a wrong password: %v", tc.mech, err)
		}
	}
	cl, _ := scram.SHA256.NewClient("bob", "x", "")
	ex, _ := NewExchange(ScramSHA256, store, nil)
	if _, err := run(t, ex, cl.NewConversation().Step); err == nil || !strings.Contains(err.Error(), "unknown user") {
		t.Fatalf("unknown user: %v", err)
	}
}

func TestPlain(t *testing.T) {
	store := users{}
	store.add(t, "alice", "secret")
	for _, tc := range []struct {
		msg, want string
	}{
		{"\x00alice\x00secret", ""},
		{"alice\x00alice\x00secret", ""},
		{"\x00alice\x00wrong", "Authentication failed: Invalid username or password"},
		{"bob\x00alice\x00secret", "Authentication failed: Client requested an authorization id that is different from username"},
		{"alice", "Authentication failed: invalid SASL/PLAIN message"},
	} {
		ex, _ := NewExchange(MechanismPlain, store, nil)
		id, err := run(t, ex, func(string) (string, error) { return tc.msg, nil })
		switch {
		case tc.want == "" && (err != nil || id.Principal != "User:alice"):
			t.Fatalf("%q: %+v, %v", tc.msg, id, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Fatalf("%q: %v, want %q", tc.msg, err, tc.want)
		}
	}
	if err := CheckPassword(context.Background(), store, "alice", "secret"); err != nil {
		t.Fatal(err)
	}
	if err := CheckPassword(context.Background(), store, "alice", "nope"); !errors.Is(err, ErrBadPassword) {
		t.Fatalf("a wrong password: %v", err)
	}
}

func TestOAuthBearer(t *testing.T) {
	is := testpki.NewIssuer(t, t.TempDir())
	v, err := NewVerifier(context.Background(), OAuthConfig{JWKS: is.JWKS, Issuer: "https://issuer", Audience: "floe"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	msg := func(token string) func(string) (string, error) {
		return func(string) (string, error) { return "n,,\x01auth=Bearer " + token + "\x01\x01", nil }
	}
	ex, _ := NewExchange(MechanismOAuthBearer, nil, v)
	id, err := run(t, ex, msg(is.Token(t, "carol", "https://issuer", "floe", time.Hour)))
	if err != nil || id.Principal != "User:carol" || time.Until(id.Expires) < 59*time.Minute {
		t.Fatalf("a good token: %+v, %v", id, err)
	}
	for name, token := range map[string]string{
		"expired":        is.Token(t, "carol", "https://issuer", "floe", -time.Hour),
		"other audience": is.Token(t, "carol", "https://issuer", "else", time.Hour),
		"other issuer":   is.Token(t, "carol", "https://else", "floe", time.Hour),
		"not a jwt":      "junk",
	} {
		ex, _ := NewExchange(MechanismOAuthBearer, nil, v)
		if _, err := run(t, ex, msg(token)); err == nil || !strings.HasPrefix(err.Error(), "Authentication failed") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := NewExchange(MechanismOAuthBearer, nil, nil); err == nil {
		t.Fatal("OAUTHBEARER without a verifier")
	}
}

func TestFailures(t *testing.T) {
	var f Failures
	for range FailBurst {
		if !f.Allow("10.0.0.1") {
			t.Fatal("refused within the burst")
		}
		f.Failed("10.0.0.1")
	}
	if f.Allow("10.0.0.1") {
		t.Fatal("allowed past the burst")
	}
	if !f.Allow("10.0.0.2") {
		t.Fatal("another address refused")
	}
}
