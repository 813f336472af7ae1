package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"floe/agent"
	"floe/metadata"
)

func init() {
	commands["user"] = runUser
}

// securityFlags are the listener, TLS and SASL flags of dev and agent,
// named as Kafka names its settings.
type securityFlags struct {
	listeners, advertised, protocolMap string
	mechanisms                         string
	// devAuth (floe dev --auth) turns SCRAM on with a generated admin.
	devAuth bool
}

func (s *securityFlags) register(fs *flag.FlagSet, c *agent.Config, dev bool) {
	fs.StringVar(&s.listeners, "listeners", "", "Kafka listeners, `NAME://host:port,...` (Kafka's listeners; default: one PLAINTEXT listener on --kafka-addr)")
	fs.StringVar(&s.advertised, "advertised-listeners", "", "`NAME://host:port,...` given to clients of each listener in Metadata (default: the bound address)")
	fs.StringVar(&s.protocolMap, "listener-security-protocol-map", "", "`NAME:PROTOCOL,...` for listeners not named after their protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)")
	fs.StringVar(&c.Security.TLSCert, "tls-cert", "", "PEM `file` of the TLS listeners' certificate chain (re-read when it changes)")
	fs.StringVar(&c.Security.TLSKey, "tls-key", "", "PEM `file` of the TLS listeners' private key (re-read when it changes)")
	fs.StringVar(&c.Security.TLSClientCA, "tls-client-ca", "", "PEM `file` of the CAs client certificates must chain to (mutual TLS; re-read when it changes)")
	fs.StringVar(&c.Security.ClientAuth, "tls-client-auth", "", "client certificates: none, requested or required (ssl.client.auth; default required when --tls-client-ca is set)")
	fs.StringVar(&s.mechanisms, "sasl-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512", "SASL `mechanisms` the SASL listeners offer: SCRAM-SHA-256, SCRAM-SHA-512, PLAIN, OAUTHBEARER")
	fs.DurationVar(&c.Security.SessionLifetime, "sasl-session-lifetime", 0, "SASL sessions end after this long unless the client re-authenticates (connections.max.reauth.ms, KIP-368); 0: never")
	fs.StringVar(&c.Security.OAuth.JWKS, "oauth-jwks", "", "JSON Web Key Set (`file or URL`) OAUTHBEARER tokens must be signed with")
	fs.DurationVar(&c.Security.OAuth.JWKSRefresh, "oauth-jwks-refresh", time.Hour, "how often a --oauth-jwks URL is fetched again")
	fs.StringVar(&c.Security.OAuth.Issuer, "oauth-issuer", "", "the iss claim OAUTHBEARER tokens must carry (empty: any)")
	fs.StringVar(&c.Security.OAuth.Audience, "oauth-audience", "", "an aud value OAUTHBEARER tokens must carry (empty: any)")
	fs.StringVar(&c.Security.OAuth.SubClaim, "oauth-sub-claim", "sub", "the token claim that names the principal (sasl.oauthbearer.sub.claim.name)")
	if dev {
		fs.BoolVar(&s.devAuth, "auth", false, "require SCRAM authentication on the Kafka listener; an admin user is created on first start and its password printed once")
	}
}

// apply puts the parsed listener settings into c.
func (s *securityFlags) apply(c *agent.Config) error {
	c.Security.SASLMechanisms = splitComma(s.mechanisms)
	if s.devAuth {
		if s.listeners != "" {
			return errors.New("--auth makes the Kafka listener SASL_PLAINTEXT: use --listeners without it")
		}
		c.Listeners = []agent.Listener{{Name: agent.ProtocolSASLPlaintext, Protocol: agent.ProtocolSASLPlaintext, Addr: c.KafkaAddr, Advertise: c.AdvertiseAddr}}
		return nil
	}
	if s.listeners == "" {
		if s.advertised != "" || s.protocolMap != "" {
			return errors.New("--advertised-listeners and --listener-security-protocol-map need --listeners")
		}
		return nil
	}
	ls, err := agent.ParseListeners(s.listeners, s.advertised, s.protocolMap)
	if err != nil {
		return err
	}
	c.Listeners = ls
	return nil
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// devAdmin is the user `floe dev --auth` creates.
const devAdmin = "admin"

// ensureDevAdmin creates the admin user of `floe dev --auth` on first
// start, with a random password printed once (to stdout, for the user
// and scripts alike); later starts keep it.
func ensureDevAdmin(ctx context.Context, store metadata.Store, log *slog.Logger) error {
	if _, err := store.ScramCredential(ctx, devAdmin, agent.ScramSHA512); err == nil {
		log.Info("SCRAM authentication on; the admin user exists (its password was printed at its creation)", "user", devAdmin)
		return nil
	} else if !errors.Is(err, metadata.ErrNotFound) {
		return err
	}
	var b [18]byte
	_, _ = rand.Read(b[:])
	password := base64.RawURLEncoding.EncodeToString(b[:])
	if err := addUser(ctx, store, devAdmin, password, []string{agent.ScramSHA256, agent.ScramSHA512}, 8192); err != nil {
		return err
	}
	fmt.Printf("floe dev --auth: created user %q with password %s (SCRAM-SHA-256 and SCRAM-SHA-512; shown once)\n", devAdmin, password)
	return nil
}

func addUser(ctx context.Context, store metadata.CredentialStore, user, password string, mechanisms []string, iterations int32) error {
	for _, m := range mechanisms {
		c, err := agent.NewScramCredential(user, m, password, iterations)
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		if err := store.UpsertScramCredential(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

const userUsage = `Usage:
  floe user add NAME --metadata URL [--password P | --password-stdin] [--mechanism M,...] [--iterations N]
  floe user delete NAME --metadata URL [--mechanism M,...]
  floe user list --metadata URL

Manages the SASL/SCRAM users in the metadata store directly (no running agent
or credential needed, as kafka-storage's --add-scram bootstraps a cluster);
through a running agent, Kafka's own tools do the same with
AlterUserScramCredentials (kafka-configs.sh --entity-type users).
`

// runUser is `floe user add|delete|list`.
func runUser(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Print(userUsage)
		return nil
	}
	verb, rest := args[0], args[1:]
	var name string
	if verb != "list" {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return fmt.Errorf("floe user %s: the user name comes first\n\n%s", verb, userUsage)
		}
		name, rest = rest[0], rest[1:]
	}
	fs := newFlagSet("user "+verb, "Manages SASL/SCRAM users in the metadata store.")
	metaURL := fs.String("metadata", "", "metadata store `URL` (postgres://… or sqlite://PATH; floe dev's is sqlite://./floe-data/meta.db)")
	password := fs.String("password", "", "the new `password` (visible to other users of this machine: prefer --password-stdin)")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input")
	mechs := fs.String("mechanism", "SCRAM-SHA-256,SCRAM-SHA-512", "SCRAM `mechanisms`")
	iters := fs.Int("iterations", 8192, "SCRAM iterations (4096–16384)")
	if err := parse(fs, rest); err != nil {
		return err
	}
	if *metaURL == "" {
		return errors.New("--metadata is required")
	}
	mechanisms := splitComma(*mechs)
	for _, m := range mechanisms {
		if m != agent.ScramSHA256 && m != agent.ScramSHA512 {
			return fmt.Errorf("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", m)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := openStore(ctx, *metaURL)
	if err != nil {
		return err
	}
	defer store.Close()
	switch verb {
	case "add":
		pw := *password
		if *fromStdin {
			line, err := bufio.NewReader(os.Stdin).ReadString('\n')
			if err != nil && line == "" {
				return fmt.Errorf("reading the password: %w", err)
			}
			pw = strings.TrimRight(line, "\r\n")
		}
		if pw == "" {
			return errors.New("a password is required: --password or --password-stdin")
		}
		if err := addUser(ctx, store, name, pw, mechanisms, int32(*iters)); err != nil {
			return err
		}
		fmt.Printf("user %s: %s\n", name, strings.Join(mechanisms, ", "))
	case "delete":
		deleted := 0
		for _, m := range mechanisms {
			err := store.DeleteScramCredential(ctx, name, m)
			if errors.Is(err, metadata.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			deleted++
		}
		if deleted == 0 {
			return fmt.Errorf("user %s has no %s credential", name, strings.Join(mechanisms, " or "))
		}
		fmt.Printf("user %s: deleted %d credential(s)\n", name, deleted)
	case "list":
		cs, err := store.ScramCredentials(ctx, nil)
		if err != nil {
			return err
		}
		byUser := map[string][]string{}
		var users []string
		for _, c := range cs {
			if _, ok := byUser[c.User]; !ok {
				users = append(users, c.User)
			}
			byUser[c.User] = append(byUser[c.User], fmt.Sprintf("%s (%d iterations)", c.Mechanism, c.Iterations))
		}
		slices.Sort(users)
		for _, u := range users {
			fmt.Printf("%s\t%s\n", u, strings.Join(byUser[u], ", "))
		}
	default:
		return fmt.Errorf("floe user: unknown verb %q\n\n%s", verb, userUsage)
	}
	return nil
}
