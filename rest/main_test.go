package rest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// server and client a test starts is stopped by it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
