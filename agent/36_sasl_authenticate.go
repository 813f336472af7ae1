package agent

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.SASLAuthenticate), AdvertisedMin: 0, HandledMin: 0, Max: 2})
}

// handleSaslAuthenticate answers a SaslAuthenticate on a listener without
// SASL (see handleSaslHandshake).
func (a *Agent) handleSaslAuthenticate(_ context.Context, r *request) (kmsg.Response, error) {
	resp := r.req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "this listener does not use SASL"
	resp.ErrorMessage = &msg
	return resp, nil
}
