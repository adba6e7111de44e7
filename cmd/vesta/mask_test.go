package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/masktest"
)

const testMaskKey = masktest.KeyText + "\n"

// maskKeyFile writes a key file and points VESTA_MASK_KEY_FILE at it for
// the test.
func maskKeyFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mask.key")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VESTA_MASK_KEY_FILE", path)
	return path
}

// vesta mask and vesta unmask: IDs from the arguments or stdin, one line
// each, back and forth; a refusal says why and exits 1, a missing key or
// a bad kind exits 2 naming it; the key is never printed.
func TestMaskCommands(t *testing.T) {
	maskKeyFile(t, testMaskKey)
	r := cli(t, "", "mask", "--tenant", "acme", "--kind", "ord", "259675389170810880")
	if r.code != 0 || r.stdout != "ord_4yk3wzn2mvgn9\n" {
		t.Fatalf("mask: %+v", r)
	}
	ids := cli(t, "", "gen", "--machine", "5", "-n", "50", "--data-dir", t.TempDir())
	masks := cli(t, ids.stdout, "mask", "--kind", "ord")
	back := cli(t, masks.stdout, "unmask", "--kind", "ORD")
	if ids.code != 0 || masks.code != 0 || back.code != 0 || back.stdout != ids.stdout || len(strings.Fields(masks.stdout)) != 50 {
		t.Fatalf("gen | mask | unmask: %+v %+v %+v", ids, masks, back)
	}
	r = cli(t, "", "unmask", "--tenant", "acme", "--kind", "ord", "--json", "ord_4yk3wzn2mvgn9", "4yk3wzn2mvgn9")
	if r.code != 0 || r.stdout != `{"id":"259675389170810880","mask":"ord_4yk3wzn2mvgn9"}`+"\n"+`{"id":"259675389170810880","mask":"4yk3wzn2mvgn9"}`+"\n" {
		t.Fatalf("unmask --json: %+v", r)
	}
	for _, tc := range []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"unmask", "--tenant", "acme", "--kind", "usr", "ord_4yk3wzn2mvgn9"}, 1, `is a mask of kind "ord", not "usr"`},
		{[]string{"unmask", "--tenant", "globex", "--kind", "ord", "ord_4yk3wzn2mvgn9"}, 1, "not a masked ID of this deployment"},
		{[]string{"unmask", "--kind", "ord", "ord_4yk3wzn2mvgnu"}, 1, "not a masked ID"},
		{[]string{"mask", "12a"}, 1, "is not an unsigned decimal"},
		{[]string{"mask", "--kind", "o-rd", "1"}, 2, "--kind:"},
		{[]string{"mask", "--tenant", "a\x01", "1"}, 2, "--tenant:"},
		{[]string{"mask", "--key", "x", "1"}, 2, "unknown flag: --key"},
	} {
		r := cli(t, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.mention) {
			t.Errorf("%q: exit %d %q; want %d saying %q", tc.args, r.code, r.stderr, tc.code, tc.mention)
		}
	}
	// A refused line leaves the others printed.
	r = cli(t, "ord_4yk3wzn2mvgn9\nnot-a-mask\nord_4yk3wzn2mvgn9\n", "unmask", "--tenant", "acme", "--kind", "ord")
	if r.code != 1 || r.stdout != "259675389170810880\n259675389170810880\n" || !strings.Contains(r.stderr, `"not-a-mask"`) {
		t.Errorf("a bad line among good ones: %+v", r)
	}

	secret := strings.Fields(testMaskKey)[2]
	for _, args := range [][]string{{"config", "print"}, {"config", "print", "--json"}} {
		if r := cli(t, "", args...); r.code != 0 || strings.Contains(r.stdout+r.stderr, secret[:12]) || !strings.Contains(r.stdout, "mask.key") {
			t.Errorf("%q shows the key, or no mask.key line: %+v", args, r)
		}
	}

	t.Setenv("VESTA_MASK_KEY_FILE", "")
	if r := cli(t, "", "mask", "1"); r.code != 2 || !strings.Contains(r.stderr, "mask.key_file: unset: masking needs a key") {
		t.Errorf("no key: %+v", r)
	}
	t.Setenv("VESTA_MASK_KEY", "slot 0 c2hvcnQ=")
	if r := cli(t, "", "mask", "1"); r.code != 2 || !strings.Contains(r.stderr, "mask.key: mask: invalid keys: line 1: slot 0: the secret is 5 bytes") ||
		!strings.Contains(r.stderr, "(env VESTA_MASK_KEY)") {
		t.Errorf("a short key: %+v", r)
	}
}

// vesta serve with a key answers every masking surface alike, and as the
// CLI masks with the same key: the client (Vesta.Mask, Vesta.Unmask), REST
// (/v1/mask, /v1/unmask, /v1/id?masked=true) and the status page's data;
// its start-up log says masking is on and how many random texts it
// refuses, never the key.
func TestServeMasking(t *testing.T) {
	maskKeyFile(t, testMaskKey)
	srv := startServe(t, "--machine", "1000", "--central-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	ctx := context.Background()
	c := rpcClient(t, srv)
	ids, err := c.NextIDs(ctx, 20)
	if err != nil {
		t.Fatal(err)
	}
	masks, err := c.Mask(ctx, "acme", "ord", ids...)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, id := range ids {
		text = append(text, id.String())
	}
	local := cli(t, strings.Join(text, "\n"), "mask", "--tenant", "acme", "--kind", "ord")
	if local.code != 0 || local.stdout != strings.Join(masks, "\n")+"\n" {
		t.Fatalf("the server's masks differ from vesta mask's with the same key:\n%v\n%+v", masks, local)
	}
	back, err := c.Unmask(ctx, "acme", "ord", masks...)
	if err != nil || !slices.Equal(back, ids) {
		t.Fatalf("client Unmask: %v, %v", back, err)
	}
	if _, err := c.Unmask(ctx, "globex", "ord", masks[0]); err == nil || !strings.Contains(err.Error(), string(api.InvalidArgument)) {
		t.Errorf("another tenant over RPC: %v", err)
	}

	base := "http://" + srv.rest
	getJSON := func(path string, v any) int {
		t.Helper()
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %s", path, b)
		}
		return res.StatusCode
	}
	var unmasked struct{ IDs []string }
	q := url.Values{"tenant": {"acme"}, "kind": {"ord"}, "mask": masks}
	if code := getJSON("/v1/unmask?"+q.Encode(), &unmasked); code != 200 || strings.Join(unmasked.IDs, "\n") != strings.Join(text, "\n") {
		t.Fatalf("/v1/unmask: %d %v", code, unmasked)
	}
	var one struct{ ID, Masked string }
	if code := getJSON("/v1/id?masked=true&tenant=acme&kind=ord", &one); code != 200 {
		t.Fatalf("/v1/id?masked=true: %d", code)
	}
	id, _ := core.ParseID(one.ID)
	if back, err := c.Unmask(ctx, "acme", "ord", one.Masked); err != nil || back[0] != id {
		t.Fatalf("the REST mask %s of %s unmasks over RPC to %v, %v", one.Masked, one.ID, back, err)
	}
	var status struct {
		Mask *struct {
			Slots         []int
			RefusedRandom float64 `json:"refused_random"`
		}
	}
	if getJSON("/v1/status", &status); status.Mask == nil || !slices.Equal(status.Mask.Slots, []int{0}) || status.Mask.RefusedRandom < 0.98 {
		t.Errorf("/v1/status mask: %+v", status.Mask)
	}

	out := srv.stop()
	if !strings.Contains(out.stderr, `msg="masking on" keys="slot 0 only" refused_random=99.`) ||
		strings.Contains(out.stderr, strings.Fields(testMaskKey)[2][:12]) {
		t.Errorf("the start-up log: %s", out.stderr)
	}
}

// A server with a key whose check refuses few random texts (the leaf
// layout, whose epoch lies far back) says so, and what to set.
func TestServeMaskingWarns(t *testing.T) {
	maskKeyFile(t, testMaskKey)
	srv := startServe(t, "--machine", "1000", "--layout", "leaf", "--central-listen", "127.0.0.1:0", "--rest-listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	out := srv.stop()
	if !strings.Contains(out.stderr, `level=WARN msg="masking: unmasking refuses few random texts; set mask.not_before`) {
		t.Errorf("no warning: %s", out.stderr)
	}
}
