package compactor

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: a
// compactor's loop must be gone once Close returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
