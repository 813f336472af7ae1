package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/internal/sasl"
	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.AlterUserSCRAMCredentials), AdvertisedMin: 0, HandledMin: 0, Max: 0})
}

// handleAlterUserScramCredentials deletes and upserts SCRAM credentials
// with Kafka's checks (ScramControlManager): one result per user; a user
// altered twice in one request is DUPLICATE_RESOURCE for all of its
// alterations; an unknown mechanism UNSUPPORTED_SASL_MECHANISM; an empty
// name, empty salt or password, or iterations outside 4096–16384
// UNACCEPTABLE_CREDENTIAL; deleting what does not exist
// RESOURCE_NOT_FOUND. The client salts the password (as Kafka's tools
// do); the agent derives and stores the server keys, never the password.
func (a *Agent) handleAlterUserScramCredentials(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	seen := map[string]int{}
	var order []string
	for _, d := range req.Deletions {
		if seen[d.Name]++; seen[d.Name] == 1 {
			order = append(order, d.Name)
		}
	}
	for _, u := range req.Upsertions {
		if seen[u.Name]++; seen[u.Name] == 1 {
			order = append(order, u.Name)
		}
	}
	results := map[string]*kerr.Error{}
	messages := map[string]string{}
	fail := func(user string, code *kerr.Error, msg string) {
		if _, done := results[user]; !done {
			results[user], messages[user] = code, msg
		}
	}
	if !a.authorizeCluster(r, opAlter) { // as Kafka: ALTER on the cluster, every user refused
		for _, user := range order {
			fail(user, kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Message)
		}
	}
	for user, n := range seen {
		if n > 1 {
			fail(user, kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		}
	}
	for _, d := range req.Deletions {
		mech := scramMechanismName(d.Mechanism)
		switch {
		case d.Name == "":
			fail(d.Name, kerr.UnacceptableCredential, "Username must not be empty")
		case mech == "":
			fail(d.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		}
		if _, done := results[d.Name]; done {
			continue
		}
		err := a.store.DeleteScramCredential(ctx, d.Name, mech)
		switch {
		case errors.Is(err, metadata.ErrNotFound):
			fail(d.Name, kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
		case err != nil:
			fail(d.Name, kerr.UnknownServerError, err.Error())
		default:
			results[d.Name] = nil
		}
	}
	for _, u := range req.Upsertions {
		mech := scramMechanismName(u.Mechanism)
		switch {
		case u.Name == "":
			fail(u.Name, kerr.UnacceptableCredential, "Username must not be empty")
		case mech == "":
			fail(u.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		case u.Iterations < sasl.ScramMinIterations:
			fail(u.Name, kerr.UnacceptableCredential, "Too few iterations")
		case u.Iterations > sasl.ScramMaxIterations:
			fail(u.Name, kerr.UnacceptableCredential, "Too many iterations")
		case len(u.Salt) == 0:
			fail(u.Name, kerr.UnacceptableCredential, "Salt must not be empty")
		case len(u.SaltedPassword) == 0:
			fail(u.Name, kerr.UnacceptableCredential, "Password must not be empty")
		}
		if _, done := results[u.Name]; done {
			continue
		}
		c, err := sasl.ScramFromSalted(u.Name, mech, u.Salt, u.SaltedPassword, u.Iterations)
		if err == nil {
			err = a.store.UpsertScramCredential(ctx, c)
		}
		if err != nil {
			fail(u.Name, kerr.UnknownServerError, fmt.Sprintf("storing the credential: %v", err))
			continue
		}
		results[u.Name] = nil
	}
	for _, user := range order {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		if e := results[user]; e != nil {
			res.ErrorCode = e.Code
			msg := messages[user]
			res.ErrorMessage = &msg
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
