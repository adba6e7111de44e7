package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
)

// FuzzServerReplies: whatever a server sends back, every call returns (an
// ID or an error) within its timeout, and nothing panics; a batch is whole
// and in increasing order. The seeds are the replies of a well-behaved
// server to the client's first calls on a connection: Vesta.Info (msgid
// 1), then Vesta.GenID and Vesta.GenIDs, or, when Info says take_ids,
// Vesta.TakeIDs with every IDs it asked for, or fewer and a retry_after_ms
// (busy), and some that break the protocol (more IDs than asked, a short
// answer without retry_after_ms, an absurd retry_after_ms); when Info
// also says singles, NextID's group of one. Waits at the
// ceiling run on a clock that skips ahead, so a busy answer costs no time.
func FuzzServerReplies(f *testing.F) {
	enc := wire.NewEncoder()
	reply := func(b []byte, msgid uint32, err *api.Error, result any) []byte {
		b, e := enc.AppendResponse(b, msgid, err, result)
		if e != nil {
			f.Fatal(e)
		}
		return b
	}
	info := reply(nil, 1, nil, wire.Info{Layout: "sorted", Epoch: wire.FormatEpoch(core.SortedEpoch), Machine: 1000, Method: 1, MaxBatch: 2})
	f.Add(reply(reply(info, 2, nil, uint64(1<<40)), 3, nil, []uint64{5, 6}))
	f.Add(reply(reply(info, 3, nil, []uint64{7}), 2, api.Errorf(api.Unavailable, "x"), nil))
	f.Add(reply(info, 2, api.Errorf(api.InvalidArgument, "count"), nil))
	f.Add(reply(nil, 1, nil, wire.Info{Layout: "vesta", Epoch: "x"}))
	// A leaf server; and one claiming Leaf's layout with another epoch or type, which its codec refuses.
	leaf := reply(nil, 1, nil, wire.Info{Layout: "leaf", Epoch: wire.FormatEpoch(core.LeafEpoch), Type: 1, Machine: 1000, Method: 1, MaxBatch: 2})
	f.Add(reply(reply(leaf, 2, nil, uint64(2127674775978377216)), 3, nil, []uint64{5, 6}))
	f.Add(reply(nil, 1, nil, wire.Info{Layout: "leaf", Epoch: wire.FormatEpoch(core.SortedEpoch), Type: 1, Machine: 1000, Method: 1, MaxBatch: 2}))
	f.Add(reply(nil, 1, nil, wire.Info{Layout: "leaf", Epoch: wire.FormatEpoch(core.LeafEpoch), Type: 0, Machine: 1000, Method: 1, MaxBatch: 2}))
	f.Add([]byte{0x94, 0x01, 0x01, 0xc0})
	take := reply(nil, 1, nil, wire.Info{Layout: "sorted", Epoch: wire.FormatEpoch(core.SortedEpoch), Machine: 1000, Method: 1, MaxBatch: 2, TakeIDs: 1})
	f.Add(reply(reply(take, 2, nil, wire.TakeIDsResult{IDs: []uint64{1 << 40}}), 3, nil, wire.TakeIDsResult{IDs: []uint64{5, 6}}))
	f.Add(reply(reply(reply(take, 2, nil, wire.TakeIDsResult{IDs: []uint64{}, RetryAfterMS: 5}), 3, nil, wire.TakeIDsResult{IDs: []uint64{9}}),
		4, nil, wire.TakeIDsResult{IDs: []uint64{7}, RetryAfterMS: 1000}))
	f.Add(reply(reply(take, 2, nil, wire.TakeIDsResult{IDs: []uint64{1, 2, 3}}), 3, nil, wire.TakeIDsResult{IDs: []uint64{8, 7}}))
	f.Add(reply(reply(take, 2, nil, wire.TakeIDsResult{IDs: []uint64{}}), 3, nil, wire.TakeIDsResult{IDs: []uint64{4}, RetryAfterMS: 1 << 63}))
	f.Add(reply(reply(take, 2, api.Errorf(api.Unavailable, "x"), nil), 3, nil, uint64(5)))
	// A server that takes coalesced single calls: groups answered whole,
	// short, with too many IDs, with an error, and with a result of
	// another type.
	singles := reply(nil, 1, nil, wire.Info{Layout: "sorted", Epoch: wire.FormatEpoch(core.SortedEpoch), Machine: 1000, Method: 1, MaxBatch: 2, TakeIDs: 1, Singles: 1})
	f.Add(reply(reply(singles, 2, nil, wire.TakeIDsResult{IDs: []uint64{1 << 40}}), 3, nil, wire.TakeIDsResult{IDs: []uint64{}, RetryAfterMS: 3}))
	f.Add(reply(reply(singles, 2, nil, wire.TakeIDsResult{IDs: []uint64{1, 2, 3}}), 3, api.Errorf(api.Unavailable, "x"), nil))
	f.Add(reply(reply(singles, 3, nil, uint64(7)), 2, nil, []uint64{5}))

	f.Fuzz(func(t *testing.T, replies []byte) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var peers []net.Conn
		cfg := client.DefaultConfig("127.0.0.1:1")
		cfg.NoFallback = true
		cfg.ConnsPerServer = 1
		cfg.Retries = -1
		cfg.Timeout = 20 * time.Millisecond
		cfg.DialContext = func(context.Context, string, string) (net.Conn, error) {
			mine, peer := net.Pipe()
			mu.Lock()
			peers = append(peers, peer)
			mu.Unlock()
			wg.Go(func() { io.Copy(io.Discard, peer) })
			wg.Go(func() { peer.Write(replies) })
			return mine, nil
		}
		c, err := client.NewWithClock(context.Background(), cfg, &skipClock{now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := c.NextID(ctx); err != nil && !errors.Is(err, client.ErrUnavailable) && !errors.Is(err, &api.Error{Code: api.InvalidArgument}) && !errors.Is(err, &api.Error{Code: api.Internal}) {
			t.Fatalf("NextID: unexpected error %v", err)
		}
		if ids, err := c.NextIDs(ctx, 2); err == nil && (len(ids) != 2 || ids[0] > ids[1]) {
			t.Fatalf("NextIDs(2) = %v", ids)
		}
		c.Close()
		mu.Lock()
		for _, p := range peers {
			p.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}

// skipClock is a clock on which every wait ends at once, moving the clock
// ahead by its length.
type skipClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *skipClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *skipClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(max(d, 0))
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}
