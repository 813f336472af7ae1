package group

import (
	"sort"
)

// assignRange gives each member, topic by topic, a contiguous range of
// partitions: members subscribed to the topic in id order, the first
// (partitions % members) getting one more (Kafka's range assignor).
func assignRange(members map[string]*cmember, topics map[string]int32) map[string]Assignment {
	out := map[string]Assignment{}
	for id := range members {
		out[id] = Assignment{}
	}
	for _, t := range sortedTopics(topics) {
		subs := subscribers(members, t)
		if len(subs) == 0 {
			continue
		}
		n := int(topics[t])
		per, extra := n/len(subs), n%len(subs)
		p := 0
		for i, id := range subs {
			k := per
			if i < extra {
				k++
			}
			for range k {
				out[id].add(t, int32(p))
				p++
			}
		}
	}
	return out
}

// assignUniform spreads all subscribed partitions evenly, keeping each
// partition with its previous target owner while that owner is under its
// fair share (a sticky uniform assignor).
func assignUniform(members map[string]*cmember, topics map[string]int32, prev map[string]Assignment) map[string]Assignment {
	out := map[string]Assignment{}
	load := map[string]int{}
	for id := range members {
		out[id] = Assignment{}
	}
	total := 0
	for _, t := range sortedTopics(topics) {
		if len(subscribers(members, t)) > 0 {
			total += int(topics[t])
		}
	}
	if len(members) == 0 {
		return out
	}
	fair := (total + len(members) - 1) / len(members)
	type tp struct {
		t string
		p int32
	}
	var rest []tp
	for _, t := range sortedTopics(topics) {
		subs := subscribers(members, t)
		if len(subs) == 0 {
			continue
		}
		for p := range topics[t] {
			kept := false
			for _, id := range subs {
				if prev[id].has(t, p) && load[id] < fair {
					out[id].add(t, p)
					load[id]++
					kept = true
					break
				}
			}
			if !kept {
				rest = append(rest, tp{t, p})
			}
		}
	}
	for _, x := range rest {
		best := ""
		for _, id := range subscribers(members, x.t) {
			if best == "" || load[id] < load[best] {
				best = id
			}
		}
		out[best].add(x.t, x.p)
		load[best]++
	}
	return out
}

func sortedTopics(topics map[string]int32) []string {
	ts := make([]string, 0, len(topics))
	for t := range topics {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return ts
}

func subscribers(members map[string]*cmember, topic string) []string {
	var ids []string
	for id, m := range members {
		if m.subscribes(topic) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}
