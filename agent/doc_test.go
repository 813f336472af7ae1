package agent

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocMapNamesEveryFile keeps doc.go's map of the package true: its
// rooms name every non-test Go file of the package exactly once, and every Go
// file doc.go names exists (paths relative to agent/).
func TestDocMapNamesEveryFile(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start, end := strings.Index(text, "// # Rooms"), strings.Index(text, "// # Lock order")
	if start < 0 || end < start {
		t.Fatal("doc.go has no \"# Rooms\" section before \"# Lock order\"")
	}
	goFile := regexp.MustCompile(`[\w/]+\.go\b`)
	inRooms := map[string]int{}
	for _, m := range goFile.FindAllString(text[start:end], -1) {
		inRooms[m]++
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		switch n := inRooms[f]; {
		case n == 0:
			t.Errorf("%s is not named in doc.go's rooms: add it to the room of its concern", f)
		case n > 1:
			t.Errorf("%s is named %d times in doc.go's rooms: name it once", f, n)
		}
	}
	for _, f := range goFile.FindAllString(text, -1) {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("doc.go names %s, which does not exist: %v", f, err)
		}
	}
}
