package metadata

import "context"

// ScramCredential is one user's SCRAM credential for one mechanism, as
// RFC 5802 has the server keep it: never the password, only the salt,
// the iteration count and the two keys derived from the salted password.
type ScramCredential struct {
	User string
	// Mechanism is "SCRAM-SHA-256" or "SCRAM-SHA-512".
	Mechanism  string
	Salt       []byte
	Iterations int32
	StoredKey  []byte // H(HMAC(SaltedPassword, "Client Key"))
	ServerKey  []byte // HMAC(SaltedPassword, "Server Key")
}

// CredentialStore is the part of the Store that holds the SASL/SCRAM
// users (Kafka's DescribeUserScramCredentials and
// AlterUserScramCredentials, `floe user`).
type CredentialStore interface {
	// ScramCredential returns user's credential for mechanism, or
	// ErrNotFound.
	ScramCredential(ctx context.Context, user, mechanism string) (ScramCredential, error)
	// ScramCredentials returns the credentials of the given users (of
	// every user when users is empty), sorted by user and mechanism.
	ScramCredentials(ctx context.Context, users []string) ([]ScramCredential, error)
	// UpsertScramCredential creates or replaces a credential.
	UpsertScramCredential(ctx context.Context, c ScramCredential) error
	// DeleteScramCredential removes user's credential for mechanism, or
	// returns ErrNotFound.
	DeleteScramCredential(ctx context.Context, user, mechanism string) error
	// ClusterSecret returns the secret named name, which the agents of the
	// cluster share: the first call anywhere stores fresh random bytes
	// (32), every later one returns them, however many agents ask at once.
	ClusterSecret(ctx context.Context, name string) ([]byte, error)
}
