package sasl

// SCRAM credentials (RFC 5802, RFC 7677): what the server keeps of a
// password, derived once from the salted password, whether the salted
// password arrives from an admin client (AlterUserScramCredentials, which
// salts client-side as Kafka's tools do) or is computed here from a
// password (`floe user add`, `floe dev --auth`, SASL/PLAIN and HTTP basic
// checks against the same users).

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"

	"github.com/xdg-go/stringprep"

	"floe/metadata"
)

// SCRAM mechanism names.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// ScramMinIterations and ScramMaxIterations are Kafka's bounds on SCRAM
// iterations (ScramMechanism min/max).
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// scramHash is the hash of a SCRAM mechanism, nil for another name.
func scramHash(mechanism string) func() hash.Hash {
	switch mechanism {
	case ScramSHA256:
		return sha256.New
	case ScramSHA512:
		return sha512.New
	}
	return nil
}

// ScramFromSalted derives the stored credential from a salted password.
func ScramFromSalted(user, mechanism string, salt, salted []byte, iterations int32) (metadata.ScramCredential, error) {
	h := scramHash(mechanism)
	if h == nil {
		return metadata.ScramCredential{}, fmt.Errorf("unknown SCRAM mechanism %q", mechanism)
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return metadata.ScramCredential{User: user, Mechanism: mechanism, Salt: salt, Iterations: iterations,
		StoredKey: stored.Sum(nil), ServerKey: mac(salted, "Server Key")}, nil
}

// saltPassword is SCRAM's Hi(Normalize(password), salt, i).
func saltPassword(mechanism, password string, salt []byte, iterations int32) ([]byte, error) {
	h := scramHash(mechanism)
	if h == nil {
		return nil, fmt.Errorf("unknown SCRAM mechanism %q", mechanism)
	}
	prepped, err := stringprep.SASLprep.Prepare(password)
	if err != nil {
		return nil, fmt.Errorf("password: %w", err)
	}
	return pbkdf2.Key(h, prepped, salt, int(iterations), h().Size())
}

// NewScramCredential derives user's credential for mechanism from a
// password, with a fresh random salt.
func NewScramCredential(user, mechanism, password string, iterations int32) (metadata.ScramCredential, error) {
	if user == "" {
		return metadata.ScramCredential{}, errors.New("empty user name")
	}
	if iterations < ScramMinIterations || iterations > ScramMaxIterations {
		return metadata.ScramCredential{}, fmt.Errorf("iterations %d: must be within %d–%d", iterations, ScramMinIterations, ScramMaxIterations)
	}
	salt := make([]byte, 32)
	_, _ = rand.Read(salt)
	salted, err := saltPassword(mechanism, password, salt, iterations)
	if err != nil {
		return metadata.ScramCredential{}, err
	}
	return ScramFromSalted(user, mechanism, salt, salted, iterations)
}

// ErrBadPassword: no credential of the user matches the password.
var ErrBadPassword = errors.New("invalid username or password")

// CheckPassword checks a password against user's SCRAM credentials (the
// strongest mechanism first): floe has one user database, which SASL/PLAIN
// and HTTP basic authentication use too.
func CheckPassword(ctx context.Context, store Credentials, user, password string) error {
	for _, mech := range []string{ScramSHA512, ScramSHA256} {
		c, err := store.ScramCredential(ctx, user, mech)
		if errors.Is(err, metadata.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		salted, err := saltPassword(mech, password, c.Salt, c.Iterations)
		if err != nil {
			return ErrBadPassword
		}
		want, err := ScramFromSalted(user, mech, c.Salt, salted, c.Iterations)
		if err != nil {
			return err
		}
		if hmac.Equal(want.StoredKey, c.StoredKey) {
			return nil
		}
		return ErrBadPassword
	}
	return ErrBadPassword
}
