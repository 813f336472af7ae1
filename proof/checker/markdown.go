package checker

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"floe/proof/history"
)

// MarkdownExamples is how many anomalies of each class WriteMarkdown shows.
const MarkdownExamples = 5

// WriteMarkdown writes a human report of r: the verdict, a table of counts
// per class (allowed or not), the history's stats, and the first few
// anomalies of each class found.
func WriteMarkdown(w io.Writer, r Result) error {
	bw := bufio.NewWriter(w)
	verdict := "valid"
	if !r.Valid {
		verdict = "INVALID: " + joinClasses(r.Bad)
	}
	fmt.Fprintf(bw, "## Kafka history check: %s\n\n", verdict)

	allowed := map[Class]bool{}
	for _, c := range r.Allowed {
		allowed[c] = true
	}
	fmt.Fprintf(bw, "| class | count | counts as failure |\n|---|---:|---|\n")
	for _, c := range Classes {
		fail := "yes"
		if allowed[c] {
			fail = "no (allowed)"
		}
		fmt.Fprintf(bw, "| `%s` | %d | %s |\n", c, r.Counts[c], fail)
	}

	s := r.Stats
	fmt.Fprintf(bw, "\n### History\n\n%d ops: %s; by kind: %s.\n", s.Ops, countsOf(s.OpsByType), countsOf(s.OpsByF))
	if len(s.MaxOffset) > 0 {
		keys := history.SortedKeys(s.MaxOffset)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%d:%d", k, s.MaxOffset[k])
		}
		fmt.Fprintf(bw, "Highest offset per key: %s.\n", strings.Join(parts, " "))
	}
	if len(s.Unseen) > 0 {
		keys := history.SortedKeys(s.Unseen)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%d:%d", k, s.Unseen[k])
		}
		fmt.Fprintf(bw, "Unseen values per key: %s.\n", strings.Join(parts, " "))
	}
	fmt.Fprintf(bw, "Cyclic components: %d (largest %d ops).\n", s.SCCs, s.LargestSCC)
	if l := s.WorstRealtimeLag; l != nil {
		fmt.Fprintf(bw, "Worst realtime lag: %v (op %d, process %d, key %d).\n", time.Duration(l.Lag), l.Op, l.Process, l.Key)
	}

	for _, c := range r.Found {
		as := r.Anomalies[c]
		fmt.Fprintf(bw, "\n### `%s` (%d)\n\n", c, r.Counts[c])
		for i, an := range as {
			if i == MarkdownExamples {
				fmt.Fprintf(bw, "- … %d more\n", r.Counts[c]-MarkdownExamples)
				break
			}
			fmt.Fprintf(bw, "- %s\n", describe(an))
		}
	}
	return bw.Flush()
}

func describe(an Anomaly) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ops %s", ints(an.Ops))
	if an.Key != nil {
		fmt.Fprintf(&b, ", key %d", *an.Key)
	}
	if len(an.Offsets) > 0 {
		fmt.Fprintf(&b, ", offsets %s", ints(an.Offsets))
	}
	if len(an.Values) > 0 {
		fmt.Fprintf(&b, ", values %s", ints(an.Values))
	}
	if an.Delta != 0 {
		fmt.Fprintf(&b, ", delta %d", an.Delta)
	}
	if len(an.Skipped) > 0 {
		fmt.Fprintf(&b, ", skipped %s", ints(an.Skipped))
	}
	if an.Count != 0 {
		fmt.Fprintf(&b, ", count %d", an.Count)
	}
	for _, st := range an.Steps {
		switch st.Rel {
		case "ww":
			fmt.Fprintf(&b, "; op %d sent %d to key %d before op %d sent %d", st.From, st.Value, st.Key, st.To, st.Value2)
		case "wr":
			fmt.Fprintf(&b, "; op %d sent %d to key %d, polled by op %d", st.From, st.Value, st.Key, st.To)
		case "process":
			fmt.Fprintf(&b, "; op %d precedes op %d in its process", st.From, st.To)
		case "realtime":
			fmt.Fprintf(&b, "; op %d completed before op %d was invoked", st.From, st.To)
		}
	}
	return b.String()
}

func ints[T int | int64](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func countsOf[K ~string](m map[K]int) string {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func joinClasses(cs []Class) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = string(c)
	}
	return strings.Join(parts, ", ")
}
