package anthropic_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: a
// stream that is not released keeps its connection's goroutines alive.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
