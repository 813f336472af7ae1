package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// rewriteRegion replaces the lines between the one begin marker and the end
// marker after it with what gen returns for them; gen gets the old lines.
func rewriteRegion(text []byte, gen func(old []string) ([]string, error)) ([]byte, error) {
	lines := strings.Split(string(text), "\n")
	begin, end := -1, -1
	for i, l := range lines {
		switch strings.TrimSpace(l) {
		case beginMarker:
			if begin >= 0 {
				return nil, errors.New("two generated regions")
			}
			begin = i
		case endMarker:
			if begin >= 0 && end < 0 {
				end = i
			}
		}
	}
	if begin < 0 || end < 0 {
		return nil, fmt.Errorf("no region between %q and %q", beginMarker, endMarker)
	}
	body, err := gen(lines[begin+1 : end])
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, l := range lines[:begin+1] {
		b.WriteString(l + "\n")
	}
	for _, l := range body {
		b.WriteString(l + "\n")
	}
	b.WriteString(strings.Join(lines[end:], "\n"))
	return b.Bytes(), nil
}

// tableRows returns the cells of a markdown table's rows, header and
// delimiter row left out. Only the first n-1 separators split: the last cell
// is prose and keeps whatever it holds.
func tableRows(lines []string, n int) [][]string {
	var rows [][]string
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if i < 2 || !strings.HasPrefix(l, "|") {
			continue
		}
		l = strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|")
		cells := strings.SplitN(l, "|", n)
		for len(cells) < n {
			cells = append(cells, "")
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, cells)
	}
	return rows
}

// tableLine formats one row.
func tableLine(cells ...string) string {
	var b strings.Builder
	b.WriteString("|")
	for _, c := range cells {
		if c == "" {
			b.WriteString(" |")
			continue
		}
		b.WriteString(" " + c + " |")
	}
	return b.String()
}
