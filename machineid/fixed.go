package machineid

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/vesta-go/vesta/core"
)

// fixedLease holds a static, iptable or k8s ID. Nothing can take such an
// ID away, so there is nothing to renew or fence: it checks the generator
// attached and keeps the file guard TimeGuard opens.
type fixedLease struct {
	base     leaseBase
	provider string
	id       core.MachineID
	clock    core.Clock
	log      *slog.Logger

	mu      sync.Mutex
	gen     *core.Generator
	closed  bool
	file    *core.FileGuard
	fileDir string
}

func newFixedLease(b leaseBase, provider string, id core.MachineID) *Lease {
	b.log.Debug("machineid: machine ID", "provider", provider, "machine", id, "method", b.method, "range", b.rng)
	return &Lease{leaseBase: b, provider: provider, h: &fixedLease{base: b, provider: provider, id: id, clock: b.clock, log: b.log}}
}

func (f *fixedLease) machine() core.MachineID { return f.id }

func (f *fixedLease) guard() core.GuardStore { return nil }

// timeGuard opens the file guard of the ID in dir on the first call.
func (f *fixedLease) timeGuard(dir string) (core.GuardStore, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return nil, ErrClosed
	case f.file != nil && f.fileDir == dir:
		return f.file, nil
	case f.file != nil:
		return nil, fmt.Errorf("%w: TimeGuard(%q) after TimeGuard(%q)", ErrConfig, dir, f.fileDir)
	case dir == "":
		return nil, nil
	}
	g, err := core.OpenFileGuard(dir, f.id)
	if err != nil {
		return nil, err
	}
	for _, w := range g.Warnings() {
		f.log.Warn("machineid: " + w)
	}
	f.file, f.fileDir = g, dir
	return g, nil
}

func (f *fixedLease) attach(gen *core.Generator) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := attachCheck(f.closed, f.gen, gen, f.id); err != nil {
		return err
	}
	f.gen = gen
	return nil
}

func (f *fixedLease) status() Status {
	return Status{Provider: f.provider, Machine: f.id, State: StateNone, At: f.clock.Now()}
}

// advertise has no record to write: a fixed ID has no store.
func (f *fixedLease) advertise(context.Context) error { return nil }

// members is this process alone: there is no store to list.
func (f *fixedLease) members(context.Context) (Members, error) {
	return Members{Store: StoreNone, List: []Member{f.base.selfMember(f.provider, f.status(), time.Time{}, 0)}}, nil
}

func (f *fixedLease) prepare(context.Context, core.Config) error { return nil }

func (f *fixedLease) checkFleet(context.Context, core.Config) error { return nil }

// close closes the file guard, if TimeGuard opened one.
func (f *fixedLease) close(context.Context) error {
	f.mu.Lock()
	f.closed = true
	file := f.file
	f.mu.Unlock()
	if file != nil {
		return file.Close()
	}
	return nil
}
