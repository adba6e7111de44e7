package redisstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/segtest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/redisstore"
)

func openStore(t testing.TB, addr string, mod func(*redisstore.Config)) *redisstore.Store {
	t.Helper()
	cfg := redisstore.Config{Addrs: []string{addr}}
	if mod != nil {
		mod(&cfg)
	}
	st, err := redisstore.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// lineNow is the loss floor's line at the Redis server's clock.
func lineNow(t testing.TB, addr string) int64 {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixMilli() * 1000
}

func TestBasics(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	st := openStore(t, srv.Addr(), nil)
	if err := st.Create(ctx, segment.TagInfo{Tag: "inv", MaxID: 1000, Step: 50, Description: "invoices"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, segment.TagInfo{Tag: "inv", MaxID: 1, Step: 1}); !errors.Is(err, segment.ErrTagExists) {
		t.Fatalf("duplicate Create = %v", err)
	}
	if err := st.Create(ctx, segment.TagInfo{Tag: "a b", MaxID: 1, Step: 1}); !errors.Is(err, segment.ErrInvalidTag) {
		t.Fatalf("Create of a bad tag = %v", err)
	}
	// A start above the line a loss would jump to is refused.
	err := st.Create(ctx, segment.TagInfo{Tag: "high", MaxID: lineNow(t, srv.Addr()) + 2*redisstore.Ahead, Step: 1})
	if !errtest.Wraps(err, segment.ErrConfig, "MaxID") {
		t.Fatalf("Create above the line = %v", err)
	}
	r, err := st.Next(ctx, "inv", 0)
	if err != nil || r != (segment.Range{First: 1000, Last: 1049, Step: 50}) {
		t.Fatalf("Next = %+v, %v", r, err)
	}
	r, err = st.Next(ctx, "inv", 100)
	if err != nil || r != (segment.Range{First: 1050, Last: 1149, Step: 50}) {
		t.Fatalf("Next(100) = %+v, %v", r, err)
	}
	if _, err := st.Next(ctx, "nope", 0); !errors.Is(err, segment.ErrUnknownTag) {
		t.Fatalf("Next of an unknown tag = %v", err)
	}
	tags, err := st.Tags(ctx)
	if err != nil || len(tags) != 1 || tags[0].Tag != "inv" || tags[0].MaxID != 1150 || tags[0].Step != 50 ||
		tags[0].Description != "invoices" || tags[0].Updated.IsZero() {
		t.Fatalf("Tags = %+v, %v", tags, err)
	}
	// redistest runs without AOF.
	if err := st.CheckDurability(ctx); !errors.Is(err, redisstore.ErrNotDurable) {
		t.Fatalf("CheckDurability = %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer c.Close()
	for _, kv := range [][2]string{{"appendonly", "yes"}, {"appendfsync", "always"}} {
		if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CheckDurability(ctx); err != nil {
		t.Fatalf("CheckDurability with appendfsync always = %v", err)
	}
	if err := c.ConfigSet(ctx, "appendonly", "no").Err(); err != nil { // a quick shutdown
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		cfg   redisstore.Config
		field string
	}{
		{"no addrs", redisstore.Config{}, "Addrs"},
		{"bad addr", redisstore.Config{Addrs: []string{"localhost"}}, "Addrs[0]"},
		{"negative DB", redisstore.Config{Addrs: []string{"a:1"}, DB: -1}, "DB"},
		{"DB on a cluster", redisstore.Config{Addrs: []string{"a:1", "b:1"}, DB: 2}, "DB"},
		{"bad prefix", redisstore.Config{Addrs: []string{"a:1"}, KeyPrefix: "a b"}, "KeyPrefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := redisstore.Open(tc.cfg)
			if !errtest.Wraps(err, redisstore.ErrConfig, tc.field) {
				t.Fatalf("Open = %v; want ErrConfig naming %s", err, tc.field)
			}
		})
	}
}

// Several issuers, each with its own client, 16 tags, 5 M numbers.
func TestLedger(t *testing.T) {
	srv := redistest.Start(t)
	_, _, n := segtest.StoreLedger(t, func() segment.Store { return openStore(t, srv.Addr(), nil) })
	if n < 5_000_000 {
		t.Fatalf("ledger of %d numbers", n)
	}
	t.Logf("%d numbers, 0 repeats", n)
}

// run issues from the issuers until stop is closed, tolerating
// ErrUnavailable (the store is being broken), and returns what each caller
// got, for segtest.Check.
func run(t *testing.T, iss []*segment.Sequencer, tags []string, stop <-chan struct{}, issued *atomic.Int64) func() [][][]int64 {
	return segtest.Callers(8, len(tags), func(c int, got [][]int64) {
		ctx := context.Background()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ti := (c + i) % len(tags)
			ns, err := iss[c%len(iss)].NextN(ctx, tags[ti], 1+i%3)
			if errors.Is(err, segment.ErrUnavailable) {
				time.Sleep(time.Millisecond)
				continue
			}
			if err != nil {
				t.Error(err)
				return
			}
			got[ti] = append(got[ti], ns...)
			issued.Add(int64(len(ns)))
		}
	})
}

// The loss floor: Redis loses reservations it acknowledged, while issuers
// run; numbers jump above the line and none repeats.
func TestLossFloor(t *testing.T) {
	for _, loss := range []string{"restarted empty", "lost its last writes"} {
		t.Run(loss, func(t *testing.T) {
			ctx := context.Background()
			srv := redistest.Start(t)
			setup := openStore(t, srv.Addr(), nil)
			tags := []string{"a", "b", "c"}
			for _, tag := range tags {
				if err := setup.Create(ctx, segment.TagInfo{Tag: tag, MaxID: 1, Step: 20}); err != nil {
					t.Fatal(err)
				}
			}
			iss := make([]*segment.Sequencer, 3)
			for i := range iss {
				cfg := segment.DefaultConfig()
				cfg.RetryBackoff = 10 * time.Millisecond
				cfg.MaxStep = 20 // many fetches
				iss[i] = segtest.Open(t, openStore(t, srv.Addr(), nil), cfg)
			}
			var issued atomic.Int64
			stop := make(chan struct{})
			wait := run(t, iss, tags, stop, &issued)
			waittest.Until(t, "numbers", func() bool { return issued.Load() > 3000 })
			c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			defer c.Close()
			line := lineNow(t, srv.Addr())
			if loss == "lost its last writes" {
				if err := c.Save(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				mark := issued.Load()
				waittest.Until(t, "numbers after the snapshot", func() bool { return issued.Load() > mark+3000 })
				srv.Kill()
			}
			srv.Restart() // empty, or back at the snapshot
			// Every tag gets past the loss: a number above the line.
			waittest.Until(t, "numbers above the line", func() bool {
				for _, tag := range tags {
					if v, err := c.HGet(ctx, "{vesta:seg}:t:"+tag, "max_id").Int64(); err != nil || v < line+redisstore.Ahead {
						return false
					}
				}
				return true
			})
			mark := issued.Load()
			waittest.Until(t, "numbers after the loss", func() bool { return issued.Load() > mark+3000 })
			close(stop)
			got := wait()
			n := segtest.Check(t, got)
			jumped := 0
			for c := range got {
				for ti := range got[c] {
					for _, v := range got[c][ti] {
						if v >= line+redisstore.Ahead {
							jumped++
						}
					}
				}
			}
			if jumped == 0 {
				t.Fatal("no number above the floor")
			}
			t.Logf("%d numbers, %d above the floor, 0 repeats", n, jumped)
		})
	}
}

// Without the floor, a Redis restarted empty loses the tags: the issuer
// answers ErrUnknownTag instead of numbers it may have issued already.
func TestNoLossFloorRestartedEmpty(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	st := openStore(t, srv.Addr(), func(c *redisstore.Config) { c.NoLossFloor = true })
	if err := st.Create(ctx, segment.TagInfo{Tag: "t", MaxID: 1, Step: 10}); err != nil {
		t.Fatal(err)
	}
	if r, err := st.Next(ctx, "t", 0); err != nil || r.First != 1 {
		t.Fatalf("Next = %+v, %v", r, err)
	}
	srv.Restart()
	if _, err := st.Next(ctx, "t", 0); !errors.Is(err, segment.ErrUnknownTag) {
		t.Fatalf("Next after the loss = %v", err)
	}
}
