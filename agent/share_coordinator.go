package agent

// The group coordinator's part in share groups: turning a group entry into
// a share group, and what deleting one removes.

import (
	"context"
	"time"

	"floe/agent/group"
)

// asShareGroup (e.mu held) makes e a share group unless it is a classic
// group with members or a consumer group: a share group id is its own, as
// in Kafka. It reports whether e is (now) a share group.
func (c *coordinator) asShareGroup(ctx context.Context, e *groupEntry, now time.Time) bool {
	if e.sg != nil {
		return true
	}
	if e.cg != nil || !e.g.IsEmpty() || (e.exists && e.g.ProtocolType() != "") {
		return false
	}
	e.sg = group.NewShareGroup(e.id, c.shareConfig(c.liveConfigs(ctx, e, now)))
	return true
}
