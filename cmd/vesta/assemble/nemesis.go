//go:build nemesis

package assemble

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
)

// nemesisPoll is how often the clock file is read: a fault injector's step
// takes effect within it.
const nemesisPoll = 50 * time.Millisecond

// nemesisClock is the test-only clock-fault hook of a binary built with
// the nemesis tag: with conf.EnvNemesisClock naming a file that holds a
// signed Go duration ("-3s", "1500ms", "0"), the server's clock is the
// system clock plus that offset, so a fault injector can step this host's
// clock under a running server. Without the variable it returns a nil
// clock (core.SystemClock). stop ends the goroutine that reads the file.
func nemesisClock(log *slog.Logger) (clk core.Clock, stop func()) {
	path := os.Getenv(conf.EnvNemesisClock)
	if path == "" {
		return nil, func() {}
	}
	n := &nemesis{path: path, log: log, clk: core.NewOffsetClock(core.NewSystemClock()), stop: make(chan struct{})}
	log.Warn("nemesis clock: this test build shifts the server's clock by the offset in the file", "file", path)
	n.poll() // the first IDs already carry the offset
	n.wg.Go(n.run)
	var once sync.Once
	return n.clk, func() {
		once.Do(func() {
			close(n.stop)
			n.wg.Wait()
		})
	}
}

type nemesis struct {
	path    string
	log     *slog.Logger
	clk     *core.OffsetClock
	stop    chan struct{}
	wg      sync.WaitGroup
	failing string // the last failure logged, "" while the file reads well
}

func (n *nemesis) run() {
	t := time.NewTicker(nemesisPoll)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			n.poll()
		}
	}
}

// poll reads the file and applies its offset. A missing or bad file keeps
// the last offset and is logged once, until it reads well again: a fault
// injector's half-written file must not step the clock, nor flood the log.
func (n *nemesis) poll() {
	d, err := readOffset(n.path)
	if err != nil {
		if msg := err.Error(); msg != n.failing {
			n.failing = msg
			n.log.Warn("nemesis clock: the file does not read; keeping the offset", "offset", n.clk.Shift(), "err", err)
		}
		return
	}
	n.failing = ""
	if old := n.clk.SetShift(d); old != d {
		n.log.Warn(fmt.Sprintf("nemesis clock: offset now %s", d), "was", old, "file", n.path)
	}
}

// readOffset parses the file's signed duration; a bare "0" is Go syntax too.
func readOffset(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("nemesis clock: %w", err)
	}
	s := strings.TrimSpace(string(b))
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("nemesis clock: %s: %w", path, err)
	}
	return d, nil
}
