package integration_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/masktest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/redisstore"
)

// python is Debian's interpreter, where scripts/deps.sh installs
// python3-msgpack (a pyenv or venv python on PATH may lack it).
const python = "/usr/bin/python3"

// TestThirdPartyClient: a MessagePack-RPC client in another language,
// written against the spec with Python's msgpack package, calls every
// procedure of a running `vesta serve`, pipelined on one connection.
func TestThirdPartyClient(t *testing.T) {
	testkit.SkipShort(t, python+" with msgpack, and redis-server")
	if out, err := exec.Command(python, "-c", "import msgpack").CombinedOutput(); err != nil {
		t.Fatalf("%s with msgpack is needed (scripts/deps.sh installs python3-msgpack): %v %s", python, err, out)
	}
	// A segment store with one tag, for Vesta.NextSeq(s).
	rds := redistest.Start(t)
	store, err := redisstore.Open(redisstore.Config{Addrs: []string{rds.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Create(context.Background(), segment.TagInfo{Tag: "py", MaxID: 1, Step: 100}); err != nil {
		t.Fatal(err)
	}
	p := serve(t, "py", serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1000", "VESTA_ID_LAYOUT", "vesta",
		"VESTA_SEGMENT_STORE", "redis", "VESTA_SEGMENT_REDIS_ADDRS", rds.Addr(),
		"VESTA_MASK_KEY", masktest.KeyText))
	out, err := exec.Command(python, "testdata/msgpack_rpc_client.py", p.Central).Output()
	if err != nil {
		t.Fatalf("client: %v %s", err, out)
	}
	var got map[string]struct {
		Error  *string         `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ok := func(proc string, v any) {
		t.Helper()
		a, found := got[proc]
		if !found || a.Error != nil {
			t.Fatalf("%s: %+v", proc, a)
		}
		if err := json.Unmarshal(a.Result, v); err != nil {
			t.Fatalf("%s: %v (%s)", proc, err, a.Result)
		}
	}
	codec, _ := core.NewCodec(core.Vesta, core.VestaEpoch)
	var id uint64
	ok("Vesta.GenID", &id)
	if e := codec.Explain(core.ID(id)); e.Machine != 1000 || e.Method != core.Central {
		t.Errorf("GenID %d: %+v", id, e)
	}
	var ids []uint64
	ok("Vesta.GenIDs", &ids)
	if len(ids) != 3 || ids[0] >= ids[1] || ids[1] >= ids[2] || ids[0] <= id {
		t.Errorf("GenIDs %v after GenID %d", ids, id)
	}
	var exp map[string]any
	ok("Vesta.ExpID", &exp)
	if exp["machine"] != 1022.0 || exp["seq"] != 5.0 || exp["time"] != 284025600.0 || exp["method"] != 2.0 ||
		exp["timestamp"] != "2024-01-01T00:00:00Z" || exp["type_name"] != "max-peak" || exp["method_name"] != "rest" {
		t.Errorf("ExpID: %v", exp)
	}
	var made uint64
	ok("Vesta.MakeID", &made)
	if made != 2610813175020394494 {
		t.Errorf("MakeID = %d; want docs/design/id-layouts.md's 2610813175020394494", made)
	}
	var tt map[string]any
	ok("Vesta.TransTime", &tt)
	if tt["timestamp"] != "2024-01-01T00:00:00Z" || tt["unix_ms"] != 1704067200000.0 {
		t.Errorf("TransTime: %v", tt)
	}
	var info map[string]any
	ok("Vesta.Info", &info)
	if info["layout"] != "vesta" || info["machine"] != 1000.0 || info["method"] != 1.0 || info["max_batch"] != 10000.0 {
		t.Errorf("Info: %v", info)
	}
	// Pipelined calls are answered in any order: together they hold the
	// tag's first four numbers.
	var one int64
	var three []int64
	ok("Vesta.NextSeq", &one)
	ok("Vesta.NextSeqs", &three)
	if nums := append(three, one); len(three) != 3 || !slices.IsSorted(three) || !sameSet(nums, []int64{1, 2, 3, 4}) {
		t.Errorf("NextSeq %d, NextSeqs %v; want 1-4 between them", one, three)
	}
	// Masks, with the key of VESTA_MASK_KEY: the worked example's ID
	// (docs/design/id-layouts.md) and its mask for tenant py, kind ord
	// (vesta mask --layout vesta --tenant py --kind ord), read back with
	// and without the prefix, in any case.
	var masks []string
	ok("Vesta.Mask", &masks)
	if len(masks) != 1 || masks[0] != "ord_2jn04ew76n9f2" {
		t.Errorf("Mask: %q", masks)
	}
	var unmasked []uint64
	ok("Vesta.Unmask", &unmasked)
	if !slices.Equal(unmasked, []uint64{2610813175020394494, 2610813175020394494}) {
		t.Errorf("Unmask: %v", unmasked)
	}
	// The holder of the worked example's ID (machine 1022, 2024): this
	// server holds a fixed ID, 1000, since it started, so none is known,
	// and why is said.
	var holder struct {
		Known, Conflict uint64
		Store, Reason   string
		Holds           []any
	}
	ok("Vesta.Holder", &holder)
	if holder.Known != 0 || holder.Conflict != 0 || holder.Store != "none" || holder.Reason == "" || holder.Holds == nil {
		t.Errorf("Holder: %+v", holder)
	}
	for proc, want := range map[string]string{
		"Vesta.GenIDs#7": "invalid_argument:", "Vesta.GenIDs#8": "invalid_argument:", "Vesta.Nope": "invalid_argument:",
		"Vesta.NextSeq#12": `not_found: segment: unknown tag "nope"`,
		"Vesta.Unmask#15":  `invalid_argument: masks[0]: mask: a mask of another kind`,
		"Vesta.Holder#17":  `invalid_argument: id`,
	} {
		if a := got[proc]; a.Error == nil || !strings.HasPrefix(*a.Error, want) {
			t.Errorf("%s: %+v; want an error starting %q", proc, a, want)
		}
	}
}

// sameSet reports whether a and b hold the same numbers.
func sameSet(a, b []int64) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}
