package features

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const prefix = "The update failed for all features since the following feature had an error: "

// TestCheck: Kafka's controller's answers, in its order of checks, for
// floe's table and for one with a range wider than its level.
func TestCheck(t *testing.T) {
	wide := Table{{Name: "group.version", Level: 1, Min: 0, Max: 2}}
	for _, tc := range []struct {
		table   Table
		updates []Update
		want    string
	}{
		{Floe, nil, ""},
		{Floe, []Update{{"metadata.version", 20, Upgrade}, {"group.version", 1, SafeDowngrade}, {"transaction.version", 0, Upgrade}, {"nope", 0, UnsafeDowngrade}}, ""},
		{Floe, []Update{{"metadata.version", 21, Upgrade}},
			"Invalid update version 21 for feature metadata.version. Local controller 3 only supports versions 20"},
		{Floe, []Update{{"group.version", 1, Upgrade}, {"transaction.version", 2, Upgrade}},
			"Invalid update version 2 for feature transaction.version. Local controller 3 does not support this feature."},
		{Floe, []Update{{"group.version", 0, SafeDowngrade}},
			"Invalid update version 0 for feature group.version. Local controller 3 only supports versions 1"},
		{Floe, []Update{{"group.version", -1, Upgrade}}, "Invalid update version -1 for feature group.version. A feature version cannot be less than 0."},
		{Floe, []Update{{"group.version", 5, 0}}, "Invalid update version 5 for feature group.version. The controller does not support the given upgrade type."},
		{Floe, []Update{{"group.version", 1, 4}}, "Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."},
		{Floe, []Update{{"unknown.feature", 1, Upgrade}}, "Invalid update version 1 for feature unknown.feature. Local controller 3 does not support this feature."},
		{wide, []Update{{"group.version", 3, Upgrade}}, "Invalid update version 3 for feature group.version. Local controller 3 only supports versions 0-2"},
		{wide, []Update{{"group.version", 0, Upgrade}},
			"Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{wide, []Update{{"group.version", 2, SafeDowngrade}}, "Invalid update version 2 for feature group.version. Can't downgrade to a newer version."},
		{wide, []Update{{"group.version", 0, UnsafeDowngrade}, {"group.version", 2, Upgrade}}, ""},
	} {
		got := tc.table.Check(3, tc.updates)
		if tc.want != "" {
			tc.want = prefix + tc.want
		}
		if got != tc.want {
			t.Errorf("Check(%+v)\n got %q\nwant %q", tc.updates, got, tc.want)
		}
	}
}

// TestFill: the supported ranges and finalized levels of floe's table,
// transaction.version (level 0) in neither, and the epoch.
func TestFill(t *testing.T) {
	resp := kmsg.NewPtrApiVersionsResponse()
	Floe.Fill(resp)
	var sup, fin []string
	for _, s := range resp.SupportedFeatures {
		sup = append(sup, s.Name)
		if f := Floe.Get(s.Name); s.MinVersion != f.Min || s.MaxVersion != f.Max {
			t.Errorf("supported %+v, table %+v", s, f)
		}
	}
	for _, f := range resp.FinalizedFeatures {
		fin = append(fin, f.Name)
		if l := Floe.Get(f.Name).Level; f.MinVersionLevel != l || f.MaxVersionLevel != l {
			t.Errorf("finalized %+v, level %d", f, l)
		}
	}
	if want := "group.version,metadata.version,share.version"; strings.Join(sup, ",") != want || strings.Join(fin, ",") != want {
		t.Fatalf("supported %v, finalized %v; want %s in both", sup, fin, want)
	}
	if resp.FinalizedFeaturesEpoch != 22 {
		t.Fatalf("epoch %d, want 20+1+1", resp.FinalizedFeaturesEpoch)
	}
	if tv := Floe.Get("transaction.version"); tv.Level >= 2 {
		t.Fatalf("transaction.version %d: floe does not serve KIP-890 part 2", tv.Level)
	}
	for i := 1; i < len(Floe); i++ {
		if Floe[i-1].Name >= Floe[i].Name {
			t.Fatalf("table not sorted at %s", Floe[i].Name)
		}
	}
}
