package ring

import (
	"fmt"
	"strconv"
	"testing"

	"floe/metadata"
	"floe/storage"
)

// TestRendezvousMovesAboutOneNth: a fourth agent takes about a quarter of
// the keys, all from the other three, and the three own a third each.
func TestRendezvousMovesAboutOneNth(t *testing.T) {
	three := []metadata.Agent{{ID: "a", NodeID: 1}, {ID: "b", NodeID: 2}, {ID: "c", NodeID: 3}}
	four := append(append([]metadata.Agent(nil), three...), metadata.Agent{ID: "d", NodeID: 4})
	const n = 20_000
	moved := 0
	per := map[string]int{}
	for range n {
		k := storage.NewObjectKey()
		before, after := Rendezvous(k, three), Rendezvous(k, four)
		per[before.ID]++
		if before.ID != after.ID {
			moved++
			if after.ID != "d" {
				t.Fatalf("range %s moved from %s to %s, not to the new agent", k, before.ID, after.ID)
			}
		}
	}
	// Binomial(20000, 1/4): 5000 ± 61 (1 sd); 10 sd either side.
	if moved < 4400 || moved > 5600 {
		t.Fatalf("the fourth agent took %d of %d ranges, want about %d", moved, n, n/4)
	}
	for id, c := range per {
		if c < 6000 || c > 7300 {
			t.Fatalf("agent %s owns %d of %d ranges over three agents, want about %d", id, c, n, n/3)
		}
	}
}

// TestRendezvousSpreadsEvenly is the regression test of raw FNV weights:
// over 10 agents (node ids 1..10) node 10 owned half of all keys, nodes
// 2..7 about 3% each.
func TestRendezvousSpreadsEvenly(t *testing.T) {
	var agents []metadata.Agent
	for id := range int32(10) {
		agents = append(agents, metadata.Agent{ID: strconv.Itoa(int(id + 1)), NodeID: id + 1})
	}
	const n = 30_000
	per := map[string]int{}
	for i := range n {
		per[Rendezvous(fmt.Sprintf("group-%d", i), agents).ID]++
	}
	// Binomial(30000, 1/10): 3000 ± 52 (1 sd); 6 sd either side.
	for _, a := range agents {
		if c := per[a.ID]; c < 2700 || c > 3300 {
			t.Fatalf("node %d owns %d of %d keys over 10 agents, want about %d (all: %v)", a.NodeID, c, n, n/10, per)
		}
	}
}
