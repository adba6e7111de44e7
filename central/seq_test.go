package central_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/segtest"
	"github.com/vesta-go/vesta/segment"
)

// gatedStore holds Next calls until gate is closed: a slow store.
type gatedStore struct {
	*segment.MemStore
	gate chan struct{}
}

func (s gatedStore) Next(ctx context.Context, tag string, step int64) (segment.Range, error) {
	select {
	case <-s.gate:
	case <-ctx.Done():
		return segment.Range{}, ctx.Err()
	}
	return s.MemStore.Next(ctx, tag, step)
}

// seqIssuer opens an issuer on store (closed at cleanup), after creating
// tags there with max_id 1 and step 100.
func seqIssuer(t testing.TB, store segment.Store, tags ...string) *segment.Sequencer {
	t.Helper()
	ctx := context.Background()
	for _, tag := range tags {
		err := store.Create(ctx, segment.TagInfo{Tag: tag, MaxID: 1, Step: 100})
		if err != nil && !errors.Is(err, segment.ErrTagExists) {
			t.Fatal(err)
		}
	}
	cfg := segment.DefaultConfig()
	cfg.RefreshTags = -1
	return segtest.Open(t, store, cfg)
}

func (p *peer) nextSeq(tag string) (int64, *api.Error) {
	p.t.Helper()
	resp := p.call(wire.ProcNextSeq, wire.NextSeqParams{Tag: tag})
	if resp.Error != nil {
		return 0, resp.Error
	}
	var v int64
	if err := wire.DecodeResult(resp.Result, &v); err != nil {
		p.t.Fatal(err)
	}
	return v, nil
}

func TestNextSeq(t *testing.T) {
	store := segment.NewMemStore()
	is := seqIssuer(t, store, "orders")
	_, addr := serve(t, newGen(t, core.Config{}), central.Config{Sequences: is, MaxBatch: 500})
	p := dial(t, addr)
	if v, werr := p.nextSeq("orders"); werr != nil || v != 1 {
		t.Fatalf("first number %d, %v; want 1 (Leaf: the tag's max_id)", v, werr)
	}
	prev := int64(1)
	for range 10 {
		var vs []int64
		p.result(wire.ProcNextSeqs, wire.NextSeqsParams{Tag: "orders", Count: 37}, &vs)
		if len(vs) != 37 {
			t.Fatalf("%d numbers; want 37", len(vs))
		}
		for _, v := range vs {
			if v <= prev {
				t.Fatalf("%d after %d: not increasing", v, prev)
			}
			prev = v
		}
	}

	for _, tc := range []struct {
		proc    string
		params  any
		code    api.Code
		mention string
	}{
		{wire.ProcNextSeq, wire.NextSeqParams{Tag: "nope"}, api.NotFound, `unknown tag "nope" (create it with: vesta seq create)`},
		{wire.ProcNextSeq, wire.NextSeqParams{Tag: "bad tag"}, api.InvalidArgument, "invalid tag"},
		{wire.ProcNextSeq, map[string]any{"tag": strings.Repeat("t", 129)}, api.InvalidArgument, "tag: 129 bytes"},
		{wire.ProcNextSeq, nil, api.InvalidArgument, "missing field tag"},
		{wire.ProcNextSeqs, wire.NextSeqsParams{Tag: "orders", Count: 0}, api.InvalidArgument, "count 0; want 1-500"},
		{wire.ProcNextSeqs, wire.NextSeqsParams{Tag: "orders", Count: 501}, api.InvalidArgument, "count 501; want 1-500"},
		{wire.ProcNextSeqs, map[string]any{"tag": "orders"}, api.InvalidArgument, "missing field count"},
	} {
		resp := p.call(tc.proc, tc.params)
		if !refused(resp.Error, tc.code, tc.mention) {
			t.Errorf("%s %v: %v; want %s mentioning %q", tc.proc, tc.params, resp.Error, tc.code, tc.mention)
		}
	}
	// The connection still works.
	if _, werr := p.nextSeq("orders"); werr != nil {
		t.Fatal(werr)
	}

	// The store fails: the buffers carry on, then unavailable, which a
	// client retries elsewhere; GenID is unaffected.
	store.Fail(errors.New("connection refused"))
	var werr *api.Error
	for i := 0; werr == nil; i++ {
		if i > 100_000 {
			t.Fatal("the buffers never ran out")
		}
		_, werr = p.nextSeq("orders")
	}
	if werr.Code != api.Unavailable || !strings.Contains(werr.Message, "connection refused") {
		t.Fatalf("store down: %v; want unavailable naming the cause", werr)
	}
	p.genID()
}

func TestNextSeqOff(t *testing.T) {
	_, addr := serve(t, newGen(t, core.Config{}), central.Config{})
	_, werr := dial(t, addr).nextSeq("orders")
	if werr == nil || werr.Code != api.NotFound || !strings.Contains(werr.Message, "sequences are off") {
		t.Fatalf("%v; want not_found: sequences are off", werr)
	}
}

// TestNextSeqWaitsAside: a call that waits for the store does not stall
// the other calls of its connection.
func TestNextSeqWaitsAside(t *testing.T) {
	store := gatedStore{MemStore: segment.NewMemStore(), gate: make(chan struct{})}
	is := seqIssuer(t, store, "slow")
	_, addr := serve(t, newGen(t, core.Config{}), central.Config{Sequences: is})
	p := dial(t, addr)
	waiting := p.send(wire.ProcNextSeq, wire.NextSeqParams{Tag: "slow"})
	p.genID() // answered while the sequence call waits
	close(store.gate)
	resp := p.recv()
	var v int64
	if resp.MsgID != waiting || resp.Error != nil || wire.DecodeResult(resp.Result, &v) != nil || v != 1 {
		t.Fatalf("the waiting call: %+v, %d", resp, v)
	}
}

// TestNextSeqUniqueAcrossServers: two servers with issuers of their own on
// one store, pipelined callers on both, many tags: no number twice, and
// each caller's numbers of a tag increase.
func TestNextSeqUniqueAcrossServers(t *testing.T) {
	store := segment.NewMemStore()
	tags := make([]string, 8)
	for i := range tags {
		tags[i] = fmt.Sprintf("tag-%d", i)
	}
	var addrs []string
	for range 2 {
		is := seqIssuer(t, store, tags...)
		_, addr := serve(t, newGen(t, core.Config{}), central.Config{Sequences: is})
		addrs = append(addrs, addr.String())
	}
	var mu sync.Mutex
	seen := map[string]map[int64]bool{}
	var wg sync.WaitGroup
	for w := range 8 {
		p := dial(t, serverAddr(addrs[w%2]))
		wg.Go(func() {
			tag := tags[w%len(tags)]
			prev := int64(0)
			local := make([]int64, 0, 2000)
			for i := range 200 {
				vs, err := seqCall(p, tag, i%2)
				if err != nil {
					t.Error(err)
					return
				}
				for _, v := range vs {
					if v <= prev {
						t.Errorf("%s: %d after %d", tag, v, prev)
					}
					prev = v
				}
				local = append(local, vs...)
			}
			mu.Lock()
			defer mu.Unlock()
			if seen[tag] == nil {
				seen[tag] = map[int64]bool{}
			}
			for _, v := range local {
				if seen[tag][v] {
					t.Errorf("%s: %d issued twice", tag, v)
				}
				seen[tag][v] = true
			}
		})
	}
	wg.Wait()
}

// seqCall makes Vesta.NextSeq (batch 0) or Vesta.NextSeqs of 17 without
// failing the test from its goroutine.
func seqCall(p *peer, tag string, batch int) ([]int64, error) {
	proc, params := wire.ProcNextSeq, any(wire.NextSeqParams{Tag: tag})
	if batch != 0 {
		proc, params = wire.ProcNextSeqs, wire.NextSeqsParams{Tag: tag, Count: 17}
	}
	p.id++
	b, err := p.enc.AppendRequest(nil, p.id, proc, params)
	if err != nil {
		return nil, err
	}
	if _, err := p.nc.Write(b); err != nil {
		return nil, err
	}
	resp, err := p.tryRecv()
	switch {
	case err != nil:
		return nil, err
	case resp.Error != nil:
		return nil, resp.Error
	case batch == 0:
		var v int64
		err := wire.DecodeResult(resp.Result, &v)
		return []int64{v}, err
	}
	var vs []int64
	err = wire.DecodeResult(resp.Result, &vs)
	return vs, err
}

type serverAddr string

func (a serverAddr) Network() string { return "tcp" }
func (a serverAddr) String() string  { return string(a) }
