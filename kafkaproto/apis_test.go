package kafkaproto

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTable(t *testing.T) {
	var tb Table // the zero Table is ready
	if _, ok := tb.Lookup(0); ok || tb.Supported(0, 3) || len(tb.All()) != 0 || len(tb.ApiVersionsKeys()) != 0 {
		t.Fatal("empty table is not empty")
	}
	// Registered out of order, as per-API files would in init order.
	tb.Register(Versions{Key: 18, AdvertisedMin: 0, HandledMin: 0, Max: 4})
	tb.Register(Versions{Key: 0, AdvertisedMin: 0, HandledMin: 3, Max: 11})
	tb.Register(Versions{Key: 3, AdvertisedMin: 0, HandledMin: 0, Max: 12})

	if v, ok := tb.Lookup(0); !ok || v != (Versions{Key: 0, AdvertisedMin: 0, HandledMin: 3, Max: 11}) {
		t.Fatalf("lookup produce: %+v %v", v, ok)
	}
	all := tb.All()
	if !slices.Equal(all, []Versions{
		{Key: 0, AdvertisedMin: 0, HandledMin: 3, Max: 11},
		{Key: 3, AdvertisedMin: 0, HandledMin: 0, Max: 12},
		{Key: 18, AdvertisedMin: 0, HandledMin: 0, Max: 4},
	}) {
		t.Fatalf("all: %+v", all)
	}
	all[0].Max = 99
	if v, _ := tb.Lookup(0); v.Max != 11 || tb.All()[0].Max != 11 {
		t.Fatal("All exposed the table's storage")
	}

	for _, tc := range []struct {
		key, version int16
		want         bool
	}{
		{0, 0, false}, {0, 2, false}, {0, 3, true}, {0, 11, true}, {0, 12, false},
		{3, 0, true}, {3, 12, true}, {3, 13, false}, {3, -1, false},
		{18, 4, true}, {18, 5, false}, {1, 4, false},
	} {
		if got := tb.Supported(tc.key, tc.version); got != tc.want {
			t.Errorf("Supported(%d, %d) = %v", tc.key, tc.version, got)
		}
	}

	keys := tb.ApiVersionsKeys()
	want := []kmsg.ApiVersionsResponseApiKey{
		{ApiKey: 0, MinVersion: 0, MaxVersion: 11}, // advertised from 0, not 3
		{ApiKey: 3, MinVersion: 0, MaxVersion: 12},
		{ApiKey: 18, MinVersion: 0, MaxVersion: 4},
	}
	if len(keys) != len(want) {
		t.Fatalf("keys %+v", keys)
	}
	for i := range want {
		if keys[i].ApiKey != want[i].ApiKey || keys[i].MinVersion != want[i].MinVersion || keys[i].MaxVersion != want[i].MaxVersion {
			t.Fatalf("key %d: %+v, want %+v", i, keys[i], want[i])
		}
	}
}

func TestTableRegisterPanics(t *testing.T) {
	for name, regs := range map[string][]Versions{
		"duplicate":            {{Key: 3, Max: 12}, {Key: 3, Max: 9}},
		"handled below min":    {{Key: 0, AdvertisedMin: 3, HandledMin: 0, Max: 11}},
		"max below handled":    {{Key: 0, HandledMin: 3, Max: 2}},
		"negative advertised":  {{Key: 0, AdvertisedMin: -1, HandledMin: 0, Max: 2}},
		"duplicate after more": {{Key: 1, Max: 4}, {Key: 2, Max: 4}, {Key: 1, Max: 4}},
	} {
		t.Run(name, func(t *testing.T) {
			var tb Table
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			for _, v := range regs {
				tb.Register(v)
			}
		})
	}
}
