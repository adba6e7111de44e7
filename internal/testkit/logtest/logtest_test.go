package logtest_test

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/vesta-go/vesta/internal/testkit/logtest"
)

// Concurrent writers and a reader (run with -race) lose nothing.
func TestBufferConcurrent(t *testing.T) {
	var buf logtest.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				log.Info("line", "w", i, "n", j)
				_ = buf.String()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(buf.String(), "msg=line"); n != 800 {
		t.Fatalf("%d lines; want 800", n)
	}
	if !strings.Contains(buf.String(), fmt.Sprintf("w=%d n=%d", 7, 99)) {
		t.Error("a line is missing")
	}
}
