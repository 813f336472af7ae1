// Package features is floe's table of Kafka's finalized features (KIP-584:
// metadata.version, group.version, …): the levels floe serves, which
// ApiVersions v3+ reports (SupportedFeatures, FinalizedFeatures), and
// Kafka's controller's answers to UpdateFeatures against them. It owns no
// state: floe's levels follow from the code it runs, not from a stored
// choice, so every agent reports the same and none can be changed.
package features

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Feature is one finalized feature: its level and the levels this floe
// supports (Kafka's SupportedFeatures range).
type Feature struct {
	Name            string
	Level, Min, Max int16
}

// Table is a set of features, by name, sorted.
type Table []Feature

// Floe is what this floe serves, each at the one level it implements (so
// Min = Max = Level: a lower level would have to turn behaviour off,
// which floe cannot):
//
//   - metadata.version 20, Kafka's 3.8-IV0. The level stands for a Kafka
//     release; floe serves the client API versions of 3.8: Fetch 16 and
//     Produce 11 (3.7-IV4, KIP-951), Metadata 12. 3.9-IV0 (21) brings
//     Fetch 17 and ListOffsets 9 and 4.0-IV0 (22) Metadata 13, which floe
//     does not serve. (floe's ListOffsets stops at 7: v8's earliest-local
//     offsets belong to tiered storage, which floe has no use for.)
//   - group.version 1: KIP-848 consumer groups (ConsumerGroupHeartbeat,
//     ConsumerGroupDescribe) are served.
//   - share.version 1: KIP-932 share groups (ShareGroupHeartbeat,
//     ShareFetch, ShareAcknowledge, …) are served.
//
// transaction.version stays at 0 and so is listed nowhere, as Kafka lists
// no feature whose level is 0: floe serves neither TV1's transaction state
// records nor TV2's per-transaction epoch bumps (KIP-890 part 2: Produce
// v12, EndTxn v5, AddPartitionsToTxn v5), and clients such as franz-go
// switch to TV2 only when transaction.version is finalized at 2 or more.
var Floe = Table{
	{Name: "group.version", Level: 1, Min: 1, Max: 1},
	{Name: "metadata.version", Level: 20, Min: 20, Max: 20},
	{Name: "share.version", Level: 1, Min: 1, Max: 1},
}

// MetadataVersion is the name of Kafka's metadata.version feature.
const MetadataVersion = "metadata.version"

// Epoch is FinalizedFeaturesEpoch: the sum of the levels, which grows when
// a later floe serves a higher level (levels never go down across
// versions), as Kafka's epoch grows with every change.
func (t Table) Epoch() int64 {
	var n int64
	for _, f := range t {
		n += int64(f.Level)
	}
	return n
}

// Get returns a feature; the zero Feature (supported at level 0 only, as
// Kafka's DISABLED range) for one t does not have.
func (t Table) Get(name string) Feature {
	if i := slices.IndexFunc(t, func(f Feature) bool { return f.Name == name }); i >= 0 {
		return t[i]
	}
	return Feature{Name: name}
}

// Fill sets ApiVersions v3+'s feature fields: the supported ranges and
// the finalized levels of the features above level 0.
func (t Table) Fill(resp *kmsg.ApiVersionsResponse) {
	for _, f := range t {
		if f.Max > 0 {
			s := kmsg.NewApiVersionsResponseSupportedFeature()
			s.Name, s.MinVersion, s.MaxVersion = f.Name, f.Min, f.Max
			resp.SupportedFeatures = append(resp.SupportedFeatures, s)
		}
		if f.Level > 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.Name, f.Level, f.Level
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
	resp.FinalizedFeaturesEpoch = t.Epoch()
}

// Kafka's FeatureUpdate.UpgradeType codes.
const (
	Upgrade         = 1
	SafeDowngrade   = 2
	UnsafeDowngrade = 3
)

// Update is one feature update of an UpdateFeatures request.
type Update struct {
	Feature     string
	Level       int16
	UpgradeType int8
}

// Check answers an UpdateFeatures request against t as Kafka's controller
// (FeatureControlManager, node nodeID) answers it: "" when every update
// may be made, else the message of the first one that may not, which
// fails the whole request with INVALID_UPDATE_VERSION. Since every level
// t supports is its current one, the updates that pass change nothing.
func (t Table) Check(nodeID int32, updates []Update) string {
	for _, u := range updates {
		if why := t.refuse(nodeID, u); why != "" {
			return "The update failed for all features since the following feature had an error: " +
				fmt.Sprintf("Invalid update version %d for feature %s. %s", u.Level, u.Feature, why)
		}
	}
	return ""
}

// refuse is why one update cannot be made, in FeatureControlManager's
// order of checks, or "".
func (t Table) refuse(nodeID int32, u Update) string {
	if u.UpgradeType < Upgrade || u.UpgradeType > UnsafeDowngrade {
		return "The controller does not support the given upgrade type."
	}
	if u.Level < 0 {
		return "A feature version cannot be less than 0."
	}
	f := t.Get(u.Feature)
	if u.Level < f.Min || u.Level > f.Max {
		if f.Max == 0 {
			return "Local controller " + strconv.Itoa(int(nodeID)) + " does not support this feature."
		}
		return "Local controller " + strconv.Itoa(int(nodeID)) + " only supports versions " + versionRange(f.Min, f.Max)
	}
	switch {
	case u.Level < f.Level && u.UpgradeType == Upgrade:
		return "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
	case u.Level > f.Level && u.UpgradeType != Upgrade:
		return "Can't downgrade to a newer version."
	}
	return ""
}

// versionRange writes a range as Kafka's VersionRange.toString does.
func versionRange(lo, hi int16) string {
	if lo == hi {
		return strconv.Itoa(int(lo))
	}
	return strconv.Itoa(int(lo)) + "-" + strconv.Itoa(int(hi))
}
