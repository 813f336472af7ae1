package agent

// The group coordinator's part in share groups: turning a group entry into
// a share group, and releasing the records of members that left.

import (
	"context"
	"slices"
	"time"

	"floe/agent/group"
	"floe/metadata"
)

// asShareGroup (e locked) makes e a share group unless it is a classic
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

// releaseShareMembers (e locked) makes the records that members of a
// share group still hold available again, in one store transaction over
// the partitions where they hold any: they left the group, or their
// session ended. A failure is logged; the locks expire anyway.
func (c *coordinator) releaseShareMembers(ctx context.Context, groupID string, members []string) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	sts, err := c.a.store.GroupShareStates(ctx, groupID)
	if err != nil {
		c.a.log.Warn("release share members: share states failed", "group", groupID, "err", err)
		return
	}
	var keys []metadata.ShareKey
	for _, st := range sts {
		if slices.ContainsFunc(st.Ranges, func(r metadata.ShareRange) bool {
			return r.State == metadata.ShareAcquired && slices.Contains(members, r.Member)
		}) {
			keys = append(keys, st.ShareKey)
		}
	}
	if len(keys) == 0 {
		return
	}
	set, err := c.shares.settings(ctx, groupID)
	if err == nil {
		err = c.a.store.UpdateShares(ctx, groupID, keys, func(_ time.Time, states map[metadata.ShareKey]*metadata.SharePartitionState) error {
			for _, st := range states {
				if st == nil {
					continue
				}
				for _, m := range members {
					st.ReleaseMember(m, set.limits)
				}
			}
			return nil
		})
	}
	if err != nil {
		c.a.log.Warn("release share members failed", "group", groupID, "err", err)
	}
}
