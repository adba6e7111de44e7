package main

import (
	"context"
	"fmt"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/segment"
)

// The segment sequence targets of vesta-bench: rpc-seq and client-seq call
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
	cl, err := client.New(ctx, rpcClientConfig(o, o.addr))
	if err != nil {
		return nil, usageIf(err)
	}
	proc := fmt.Sprintf("%s {tag: %q}", wire.ProcNextSeq, o.tag)
	if o.batch > 1 {
		proc = fmt.Sprintf("%s {tag: %q, count: %d}", wire.ProcNextSeqs, o.tag, o.batch)
	}
	tg := &benchTarget{
		server: "Go client (no prefetch, fallback or retry) " + proc + " to the central server at " + o.addr + " (--addr)",
		conns:  o.conns, close: cl.Close,
	}
	seqCalls(tg, cl, o)
	return tg, nil
}

// seqCalls makes tg's call NextSeq(tag), or NextSeqs(tag, B) with --batch.
func seqCalls(tg *benchTarget, cl *client.Client, o benchOptions) {
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
}

func openClientSeq(ctx context.Context, o benchOptions) (*benchTarget, error) {
	cfg := client.DefaultConfig(o.addr)
	cfg.NoFallback = true
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
	seqCalls(tg, cl, o)
	return tg, nil
}
