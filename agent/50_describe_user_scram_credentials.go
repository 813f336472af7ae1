package agent

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DescribeUserSCRAMCredentials), AdvertisedMin: 0, HandledMin: 0, Max: 0})
}

// scramMechanismCodes are Kafka's ScramMechanism enum values.
var scramMechanismCodes = map[string]int8{ScramSHA256: 1, ScramSHA512: 2}

func scramMechanismName(code int8) string {
	for name, c := range scramMechanismCodes {
		if c == code {
			return name
		}
	}
	return ""
}

// handleDescribeUserScramCredentials lists the mechanisms and iterations
// of the users named (of every user with a credential when none are), as
// Kafka does: a user named twice is DUPLICATE_RESOURCE, a named user
// without credentials RESOURCE_NOT_FOUND.
func (a *Agent) handleDescribeUserScramCredentials(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	count := map[string]int{}
	var names []string
	for _, u := range req.Users {
		if count[u.Name]++; count[u.Name] == 1 {
			names = append(names, u.Name)
		}
	}
	if !a.authorizeCluster(r, opDescribe) { // as Kafka: DESCRIBE on the cluster
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(kerr.ClusterAuthorizationFailed.Message)
		return resp, nil
	}
	creds, err := a.store.ScramCredentials(ctx, names)
	if err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		return resp, nil
	}
	byUser := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	var order []string
	for _, c := range creds {
		if _, ok := byUser[c.User]; !ok {
			order = append(order, c.User)
		}
		info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		info.Mechanism, info.Iterations = scramMechanismCodes[c.Mechanism], c.Iterations
		byUser[c.User] = append(byUser[c.User], info)
	}
	if len(req.Users) > 0 {
		order = names
	}
	for _, u := range order {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u
		switch {
		case count[u] > 1:
			res.ErrorCode = kerr.DuplicateResource.Code
			msg := "Cannot describe SCRAM credentials for the same user twice in a single request: " + u
			res.ErrorMessage = &msg
		case len(byUser[u]) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			msg := "Attempt to describe a user credential that does not exist: " + u
			res.ErrorMessage = &msg
		default:
			res.CredentialInfos = byUser[u]
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
