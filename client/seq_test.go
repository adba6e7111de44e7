package client_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/sony/gobreaker/v2"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/segtest"
	"github.com/vesta-go/vesta/segment"
)

// seqServers starts n central servers, each with a segment sequencer of its
// own on one MemStore holding tags (max_id 1, step 50).
func seqServers(t testing.TB, n int, tags ...string) ([]*centralServer, *segment.MemStore) {
	t.Helper()
	store := segment.NewMemStore()
	ctx := context.Background()
	for _, tag := range tags {
		if err := store.Create(ctx, segment.TagInfo{Tag: tag, MaxID: 1, Step: 50}); err != nil {
			t.Fatal(err)
		}
	}
	var out []*centralServer
	for i := range n {
		cfg := segment.DefaultConfig()
		cfg.RefreshTags = -1
		is := segtest.Open(t, store, cfg)
		out = append(out, startCentral(t, core.MachineID(1000+i), central.Config{Sequences: is}))
	}
	return out, store
}

// seqLedger checks that no number of a tag occurs twice.
type seqLedger struct {
	mu   sync.Mutex
	seen map[string]map[int64]bool
}

func (l *seqLedger) add(t testing.TB, tag string, vs ...int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]map[int64]bool{}
	}
	if l.seen[tag] == nil {
		l.seen[tag] = map[int64]bool{}
	}
	for _, v := range vs {
		if l.seen[tag][v] {
			t.Errorf("%s: %d issued twice", tag, v)
		}
		l.seen[tag][v] = true
	}
}

func TestSeq(t *testing.T) {
	tags := []string{"a", "b", "c"}
	servers, _ := seqServers(t, 2, tags...)
	for _, tc := range []struct {
		name             string
		prefetch, maxTag int
	}{{"direct", 0, 0}, {"prefetch", 100, 0}, {"prefetch, evicting", 30, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, servers[0].addr, servers[1].addr)
			cfg.SeqPrefetch, cfg.SeqMaxTags = tc.prefetch, tc.maxTag
			c := newClient(t, cfg)
			var led seqLedger
			var wg sync.WaitGroup
			for w := range 6 {
				tag := tags[w%len(tags)]
				wg.Go(func() {
					ctx := context.Background()
					for i := range 300 {
						if i%3 == 2 {
							vs, err := c.NextSeqs(ctx, tag, 7)
							if err != nil {
								t.Error(err)
								return
							}
							if len(vs) != 7 || !slices.IsSorted(vs) {
								t.Errorf("NextSeqs: %v", vs)
							}
							led.add(t, tag, vs...)
							continue
						}
						v, err := c.NextSeq(ctx, tag)
						if err != nil {
							t.Error(err)
							return
						}
						led.add(t, tag, v)
					}
				})
			}
			wg.Wait()
		})
	}
}

func TestSeqErrors(t *testing.T) {
	servers, store := seqServers(t, 2, "orders")
	cfg := testConfig(t, servers[0].addr, servers[1].addr)
	cfg.SeqPrefetch = 10
	c := newClient(t, cfg)
	ctx := context.Background()

	// An unknown tag is the server's answer, not its failure: however
	// many, they open no breaker.
	for range 15 { // three times the default BreakerFailures
		_, err := c.NextSeq(ctx, "nope")
		if !errors.Is(err, &api.Error{Code: api.NotFound}) {
			t.Fatalf("unknown tag: %v; want not_found", err)
		}
	}
	for _, s := range c.Servers() {
		if s.Breaker != gobreaker.StateClosed {
			t.Fatalf("after unknown tags, the breaker of %s is %v; want closed", s.Addr, s.Breaker)
		}
	}
	if _, err := c.NextSeq(ctx, "bad tag"); !errors.Is(err, segment.ErrInvalidTag) {
		t.Fatalf("bad tag: %v; want segment.ErrInvalidTag", err)
	}
	if _, err := c.NextSeqs(ctx, "orders", 0); !errors.Is(err, segment.ErrInvalidCount) {
		t.Fatalf("NextSeqs(0): %v; want segment.ErrInvalidCount", err)
	}
	first, err := c.NextSeq(ctx, "orders")
	if err != nil || first != 1 {
		t.Fatalf("first number %d, %v; want 1", first, err)
	}

	// One server dies: the other serves.
	servers[0].kill()
	for range 50 {
		if _, err := c.NextSeq(ctx, "orders"); err != nil {
			t.Fatalf("one server down: %v", err)
		}
	}
	// The store dies: the buffers carry on, then ErrUnavailable.
	store.Fail(errors.New("connection refused"))
	for i := 0; ; i++ {
		_, err := c.NextSeq(ctx, "orders")
		if err == nil {
			if i > 100_000 {
				t.Fatal("the buffers never ran out")
			}
			continue
		}
		if !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, &api.Error{Code: api.Unavailable}) {
			t.Fatalf("store down: %v; want ErrUnavailable wrapping unavailable", err)
		}
		break
	}
}

func TestSeqConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mod     func(*client.Config)
		mention string
	}{
		{"SeqPrefetch negative", func(c *client.Config) { c.SeqPrefetch = -1 }, "SeqPrefetch"},
		{"SeqPrefetch too large", func(c *client.Config) { c.SeqPrefetch = 1<<20 + 1 }, "SeqPrefetch"},
		{"SeqMaxTags negative", func(c *client.Config) { c.SeqMaxTags = -1 }, "SeqMaxTags"},
		{"SeqMaxTags too large", func(c *client.Config) { c.SeqMaxTags = 1<<16 + 1 }, "SeqMaxTags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, "127.0.0.1:1")
			tc.mod(&cfg)
			err := cfg.Validate()
			if !errtest.Wraps(err, client.ErrConfig, tc.mention) {
				t.Fatalf("%v; want ErrConfig naming %s", err, tc.mention)
			}
		})
	}
}
