package main

import (
	"encoding/json"
	"testing"

	"github.com/vesta-go/vesta/cmd/vesta/assemble/assembletest"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/segment"
)

// rpc-seq and client-seq drive the sequence procedures of a server with a
// segment store (Redis), assembled as 'vesta serve' assembles it; bad
// flags are usage errors.
func TestBenchSeq(t *testing.T) {
	rs := redistest.Start(t)
	cfg := assembletest.Config(t)
	cfg.Machine.ID = new(1023)
	cfg.REST.Listen, cfg.Metrics.Listen = "", ""
	cfg.Segment.Store = conf.SegmentStoreRedis
	cfg.Segment.Redis.Addrs = []string{rs.Addr()}
	assembletest.CreateTag(t, cfg.Segment, segment.TagInfo{Tag: "orders", MaxID: 1000, Step: 50})
	addr := assembletest.Start(t, cfg).CentralAddr()
	for _, tc := range []struct {
		target string
		batch  string
	}{{"rpc-seq", "1"}, {"client-seq", "1"}, {"rpc-seq", "7"}, {"client-seq", "7"}} {
		args := []string{tc.target, "--addr", addr, "--tag", "orders", "-c", "4", "-b", tc.batch, "-d", "300ms", "--json"}
		if tc.target == "client-seq" {
			args = append(args, "--seq-prefetch", "100")
		}
		r := cli(t, args...)
		var res benchResult
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || res.Calls == 0 || res.Errors != 0 ||
			res.IDs != res.Calls*uint64(res.Batch) {
			t.Fatalf("%v: %d %s %s", args, r.code, r.stdout, r.stderr)
		}
	}
	for _, args := range [][]string{
		{"rpc-seq"},
		{"rpc-seq", "--addr", addr, "--tag", "bad tag"},
		{"client-seq", "--addr", addr, "--seq-prefetch", "-1"},
	} {
		if r := cli(t, args...); r.code != 2 {
			t.Errorf("%v: exit %d %s; want a usage error", args, r.code, r.stderr)
		}
	}
}
