package main

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent"
	"floe/kafkaproto"
)

// apiName matches one "Name (key)" of the API column.
var apiName = regexp.MustCompile(`(\w+) \((\d+)\)`)

// apiRow is one row of the API table: APIs served at the same versions,
// sharing one note.
type apiRow struct {
	names    []string
	keys     []int16
	versions string
	notes    string
}

// apiTable writes the table of Kafka APIs served from agent.APIVersions.
// A row of the old table may name several APIs; it stays one row while they
// are served at the same versions and is split when they are not. The names
// (Kafka's spelling) and the notes are kept by key; an API the table does
// not know yet gets kmsg's name and no note; an API no longer served loses
// its row.
func apiTable(_ string, old []string) ([]string, error) {
	return apiTableFrom(agent.APIVersions(), old)
}

func apiTableFrom(served []kafkaproto.Versions, old []string) ([]string, error) {
	byKey := make(map[int16]kafkaproto.Versions, len(served))
	for _, v := range served {
		byKey[v.Key] = v
	}
	known := make(map[int16]bool)
	var rows []apiRow
	for _, cells := range tableRows(old, 3) {
		var groups []apiRow // one per distinct versions, in the row's order
		for _, m := range apiName.FindAllStringSubmatch(cells[0], -1) {
			k, err := strconv.ParseInt(m[2], 10, 16)
			if err != nil {
				return nil, fmt.Errorf("api table: %q: %w", cells[0], err)
			}
			key := int16(k)
			if known[key] {
				return nil, fmt.Errorf("api table: key %d in two rows", key)
			}
			known[key] = true
			v, ok := byKey[key]
			if !ok {
				continue
			}
			vs := versionsCell(v)
			i := slices.IndexFunc(groups, func(g apiRow) bool { return g.versions == vs })
			if i < 0 {
				groups = append(groups, apiRow{versions: vs, notes: cells[2]})
				i = len(groups) - 1
			}
			groups[i].names = append(groups[i].names, m[1])
			groups[i].keys = append(groups[i].keys, key)
		}
		rows = append(rows, groups...)
	}
	for _, v := range served {
		if !known[v.Key] {
			rows = append(rows, apiRow{names: []string{kmsg.Key(v.Key).Name()}, keys: []int16{v.Key}, versions: versionsCell(v)})
		}
	}
	slices.SortStableFunc(rows, func(a, b apiRow) int { return cmp.Compare(a.keys[0], b.keys[0]) })

	lines := []string{"| API (key) | versions | notes |", "|---|---|---|"}
	for _, r := range rows {
		apis := make([]string, len(r.names))
		for i := range r.names {
			apis[i] = fmt.Sprintf("%s (%d)", r.names[i], r.keys[i])
		}
		lines = append(lines, tableLine(strings.Join(apis, ", "), r.versions, r.notes))
	}
	return lines, nil
}

// versionsCell writes a registration's range: "0–4", "0" for a single
// version, and both ranges when fewer versions are handled than advertised.
func versionsCell(v kafkaproto.Versions) string {
	span := func(lo, hi int16) string {
		if lo == hi {
			return strconv.Itoa(int(lo))
		}
		return fmt.Sprintf("%d–%d", lo, hi)
	}
	if v.HandledMin != v.AdvertisedMin {
		return span(v.HandledMin, v.Max) + " served, " + span(v.AdvertisedMin, v.Max) + " advertised"
	}
	return span(v.AdvertisedMin, v.Max)
}
