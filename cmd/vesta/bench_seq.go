package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/segment"
)

// The segment sequence targets of vesta bench: rpc-seq and client-seq call
// a running 'vesta serve' with a segment store (--addr, required) for the
// numbers of --tag, the anchor being redis-incr (a per-call INCR is what a
// sequence without segments costs).

// seqTargets are the targets that issue sequence numbers.
func seqTarget(t string) bool { return t == "rpc-seq" || t == "client-seq" }

func (o *benchOptions) validateSeq() error {
	if !seqTarget(o.target) {
		return nil
	}
	if o.addr == "" {
		return fmt.Errorf("%w: --addr: %s needs the central address of a 'vesta serve' with segment.store set", errUsage, o.target)
	}
	if err := segment.ValidTag(o.tag); err != nil {
		return fmt.Errorf("%w: --tag: %w", errUsage, err)
	}
	if o.seqPrefetch < 0 || o.seqPrefetch > 1<<20 {
		return fmt.Errorf("%w: --seq-prefetch %d; want 0-%d", errUsage, o.seqPrefetch, 1<<20)
	}
	return nil
}

func openSeqTarget(ctx context.Context, o benchOptions) (*benchTarget, error) {
	if o.target == "client-seq" {
		return openClientSeq(ctx, o)
	}
	conns := make([]*rpcConn, o.conns)
	for i := range conns {
		conns[i] = &rpcConn{addr: o.addr, batch: o.batch, enc: wire.NewEncoder()}
	}
	closeAll := func() error {
		var errs []error
		for _, c := range conns {
			if c.nc != nil {
				errs = append(errs, c.nc.Close())
			}
		}
		return errors.Join(errs...)
	}
	// The first connection asks what the server allows.
	info, err := conns[0].info()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("rpc-seq: %s: %w", o.addr, err), closeAll())
	}
	if uint64(o.batch) > info.MaxBatch {
		closeAll()
		return nil, fmt.Errorf("%w: --batch %d: the server at %s allows at most %d (max_batch)", errUsage, o.batch, o.addr, info.MaxBatch)
	}
	ls := newLanes(o.conns, o.concurrency, func(i int) func([]*laneCall) {
		return func(b []*laneCall) { conns[i].execSeq(o.tag, b) }
	})
	method := fmt.Sprintf("%s {tag: %q}", wire.MethodNextSeq, o.tag)
	if o.batch > 1 {
		method = fmt.Sprintf("%s {tag: %q, count: %d}", wire.MethodNextSeqs, o.tag, o.batch)
	}
	return &benchTarget{
		server: "MessagePack-RPC " + method + " to the central server at " + o.addr + " (--addr)",
		conns:  o.conns, call: ls.call, close: closeAll,
	}, nil
}

// execSeq is exec for Vesta.NextSeq(s): the batch's calls in one write,
// answers matched by msgid.
func (c *rpcConn) execSeq(tag string, batch []*laneCall) {
	fail := func(err error) {
		for _, lc := range batch {
			lc.ids, lc.err = 0, err
		}
	}
	if err := c.dial(); err != nil {
		fail(err)
		return
	}
	c.out = c.out[:0]
	base := c.msgid + 1
	for range batch {
		c.msgid++
		if c.batch == 1 {
			c.out, _ = c.enc.AppendRequest(c.out, c.msgid, wire.MethodNextSeq, &wire.NextSeqParams{Tag: tag})
		} else {
			c.out, _ = c.enc.AppendRequest(c.out, c.msgid, wire.MethodNextSeqs, &wire.NextSeqsParams{Tag: tag, Count: uint64(c.batch)})
		}
	}
	for _, lc := range batch {
		lc.ids, lc.err = 0, errors.New("rpc-seq: no answer")
	}
	var nums []int64
	_, err := c.roundTrip(len(batch), func(r wire.Response) error {
		i := r.MsgID - base
		if int(i) >= len(batch) {
			return fmt.Errorf("rpc-seq: answer to msgid %d, which was not asked", r.MsgID)
		}
		lc := batch[i]
		switch {
		case r.Error != nil:
			lc.err = r.Error
		case c.batch == 1:
			var v int64
			if lc.err = wire.DecodeResult(r.Result, &v); lc.err == nil {
				lc.ids = 1
			}
		default:
			if lc.err = wire.DecodeResult(r.Result, &nums); lc.err == nil {
				if lc.ids = len(nums); lc.ids != c.batch {
					lc.err = fmt.Errorf("rpc-seq: %d numbers for a count of %d", lc.ids, c.batch)
				}
			}
		}
		return nil
	})
	if err != nil {
		fail(err)
	}
}

func openClientSeq(ctx context.Context, o benchOptions) (*benchTarget, error) {
	cfg := client.DefaultConfig(o.addr)
	cfg.Fallback = false
	cfg.SeqPrefetch = o.seqPrefetch
	conns := 2
	if o.conns > 0 {
		cfg.ConnsPerServer, conns = o.conns, o.conns
	}
	cl, err := client.New(ctx, cfg)
	if err != nil {
		return nil, usageIf(err)
	}
	tg := &benchTarget{
		server: fmt.Sprintf("Go client NextSeq(%q) with a per-tag prefetch of %d to the central server at %s (--addr)", o.tag, o.seqPrefetch, o.addr),
		conns:  conns, close: cl.Close,
	}
	if o.batch == 1 {
		tg.call = func(ctx context.Context, _ int) (int, error) {
			_, err := cl.NextSeq(ctx, o.tag)
			return 1, err
		}
	} else {
		tg.call = func(ctx context.Context, _ int) (int, error) {
			vs, err := cl.NextSeqs(ctx, o.tag, o.batch)
			return len(vs), err
		}
	}
	return tg, nil
}
