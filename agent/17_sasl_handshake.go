package agent

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.SASLHandshake), AdvertisedMin: 0, HandledMin: 0, Max: 1})
}

// handleSaslHandshake answers a SaslHandshake that reached a handler: on a
// SASL listener the reader answers them itself (sasl.go), so this is a
// listener without SASL, where Kafka answers ILLEGAL_SASL_STATE too.
func (a *Agent) handleSaslHandshake(_ context.Context, r *request) (kmsg.Response, error) {
	resp := r.req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return resp, nil
}
