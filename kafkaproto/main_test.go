package kafkaproto

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a test leaves goroutines behind (the test
// broker's connections, franz-go clients).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
