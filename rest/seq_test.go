package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/segtest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/rest"
	"github.com/vesta-go/vesta/segment"
)

var errStoreDown = errors.New("connection refused")

// seqServer is a REST server with a segment sequencer on a MemStore holding
// the given tags, each created with max_id 1 (Leaf's first number) and
// step 10.
func seqServer(t testing.TB, tags ...string) (*rest.Server, *segment.MemStore, *core.ManualClock) {
	t.Helper()
	is, store, clock := seqIssuer(t, tags...)
	gen, _ := vestaGen(t)
	return newServer(t, gen, rest.Config{Sequences: is, MaxBatch: 100}), store, clock
}

// seqIssuer is seqServer's issuer, on a manual clock at start2024, closed
// at cleanup.
func seqIssuer(t testing.TB, tags ...string) (*segment.Sequencer, *segment.MemStore, *core.ManualClock) {
	t.Helper()
	store := segment.NewMemStore()
	ctx := context.Background()
	for _, tag := range tags {
		if err := store.Create(ctx, segment.TagInfo{Tag: tag, MaxID: 1, Step: 10}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := segment.DefaultConfig()
	cfg.RefreshTags = -1
	clock := core.NewManualClock(start2024)
	cfg.Clock = clock // the retry backoff passes when the test says
	return segtest.Open(t, store, cfg), store, clock
}

// drainUntil calls target until it answers status, at most n times, and
// returns that answer: the buffers hold at most a few ranges.
func drainUntil(t *testing.T, s *rest.Server, target string, status, n int) response {
	t.Helper()
	for range n {
		if r := get(t, s.Handler(), target); r.Status == status {
			return r
		}
	}
	t.Fatalf("%s: no %d answer in %d calls", target, status, n)
	return response{}
}

func TestSeq(t *testing.T) {
	s, _, _ := seqServer(t, "orders", "invoices")
	for _, c := range callers(t, s) {
		t.Run(c.name, func(t *testing.T) {
			r := c.do(t, req(http.MethodGet, "/v1/seq/orders", "", ""))
			var one struct{ Tag, ID string }
			decode(t, r.Body, &one)
			if r.Status != http.StatusOK || one.Tag != "orders" || one.ID == "" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			first, _ := strconv.ParseInt(one.ID, 10, 64)
			r = c.do(t, req(http.MethodGet, "/v1/seq/orders?count=25", "", ""))
			var many struct {
				Tag string
				IDs []string
			}
			decode(t, r.Body, &many)
			if r.Status != http.StatusOK || many.Tag != "orders" || len(many.IDs) != 25 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			prev := first
			for _, s := range many.IDs {
				v, err := strconv.ParseInt(s, 10, 64)
				if err != nil || v <= prev {
					t.Fatalf("ids %v after %d: not increasing", many.IDs, first)
				}
				prev = v
			}
		})
	}
	// The first number is Leaf's: the tag's max_id.
	r := get(t, s.Handler(), "/v1/seq/invoices")
	if !strings.Contains(r.Body, `"id":"1"`) {
		t.Errorf("first number of a tag created with max_id 1: %s; want 1", r.Body)
	}
}

func TestSeqErrors(t *testing.T) {
	s, _, _ := seqServer(t, "orders")
	for _, tc := range []struct {
		target  string
		status  int
		code    string
		mention string
	}{
		{"/v1/seq/nope", 404, "not_found", `unknown tag "nope" (create it with: vesta seq create)`},
		{"/v1/seq/bad%20tag", 400, "invalid_argument", "tag:"},
		{"/v1/seq/" + strings.Repeat("x", 129), 400, "invalid_argument", `x..."` + ": length 129, not 1-128"},
		{"/v1/seq/orders?count=0", 400, "invalid_argument", "count: 0 out of range 1-100"},
		{"/v1/seq/orders?count=101", 400, "invalid_argument", "count: 101 out of range 1-100"},
		{"/v1/seq/orders?count=-1", 400, "invalid_argument", "count:"},
		{"/v1/seq/orders?count=1&count=2", 400, "invalid_argument", "count: given 2 times"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			wantJSONError(t, get(t, s.Handler(), tc.target), tc.status, tc.code, tc.mention)
		})
	}
	// A long hostile tag is not echoed whole.
	if r := get(t, s.Handler(), "/v1/seq/"+strings.Repeat("%21", 3000)); r.Status != 400 || len(r.Body) > 400 {
		t.Errorf("a 3000-byte tag: %d, %d bytes of answer", r.Status, len(r.Body))
	}
	// A server without a store.
	gen, _ := vestaGen(t)
	off := newServer(t, gen, rest.Config{})
	wantJSONError(t, get(t, off.Handler(), "/v1/seq/orders"), 404, "not_found", "sequences are off")
	if r := get(t, off.Handler(), "/readyz"); r.Status != 200 || strings.Contains(r.Body, `"segment"`) {
		t.Errorf("/readyz without a store: %d %s", r.Status, r.Body)
	}
}

// TestSeqStoreDown: the buffers carry on, then 503 unavailable; /readyz
// stays 200 (IDs are still issued) and says what is wrong with the store;
// the store healed, numbers come again.
func TestSeqStoreDown(t *testing.T) {
	s, store, clock := seqServer(t, "orders")
	if r := get(t, s.Handler(), "/v1/seq/orders"); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if r := get(t, s.Handler(), "/readyz"); r.Status != 200 || !strings.Contains(r.Body, `"segment":"ok"`) {
		t.Fatalf("/readyz: %d %s", r.Status, r.Body)
	}
	store.Fail(errStoreDown)
	r := drainUntil(t, s, "/v1/seq/orders", http.StatusServiceUnavailable, 1000)
	wantJSONError(t, r, 503, "unavailable", "connection refused")
	r = get(t, s.Handler(), "/readyz")
	if r.Status != 200 || !strings.Contains(r.Body, `"segment":"unavailable: `) {
		t.Errorf("/readyz with the store down: %d %s; want 200 and the segment line", r.Status, r.Body)
	}
	if r := get(t, s.Handler(), "/v1/id"); r.Status != 200 {
		t.Errorf("/v1/id with the store down: %d %s", r.Status, r.Body)
	}
	store.Fail(nil)
	// Past the retry backoff the issuer fetches again by itself.
	waittest.Until(t, "a number after the store healed", func() bool {
		if get(t, s.Handler(), "/v1/seq/orders").Status == http.StatusOK {
			return true
		}
		clock.Advance(time.Second)
		return false
	})
	if r := get(t, s.Handler(), "/readyz"); !strings.Contains(r.Body, `"segment":"ok"`) {
		t.Errorf("/readyz after recovery: %s", r.Body)
	}
}

// springBody is leaf-server's error answer.
type springBody struct {
	Timestamp json.Number
	Status    int
	Error     string
	Exception string
	Message   string
	Path      string
}

func wantLeafError(t *testing.T, r response, message, path string) {
	t.Helper()
	if r.Status != 500 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %q %s; want 500 JSON", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	var b springBody
	decode(t, r.Body, &b)
	if b.Status != 500 || b.Error != "Internal Server Error" || b.Message != message || b.Path != path || b.Timestamp == "" ||
		b.Exception != "com.sankuai.inf.leaf.server.exception.LeafServerException" {
		t.Fatalf("body %s; want message %q, path %q", r.Body, message, path)
	}
}

// TestLeafAPI: Leaf's clients read a bare decimal; Leaf's failures are a
// 500 with Spring's error body and Leaf's Result codes.
func TestLeafAPI(t *testing.T) {
	s, store, _ := seqServer(t, "leaf-segment-test")
	for _, c := range callers(t, s) {
		t.Run(c.name, func(t *testing.T) {
			r := c.do(t, req(http.MethodGet, "/api/segment/get/leaf-segment-test", "", ""))
			if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
				t.Fatalf("%d %q %s", r.Status, r.Header.Get("Content-Type"), r.Body)
			}
			if _, err := strconv.ParseInt(r.Body, 10, 64); err != nil {
				t.Fatalf("body %q is not a bare decimal", r.Body)
			}
			r = c.do(t, req(http.MethodGet, "/api/snowflake/get/anything", "", ""))
			id, err := strconv.ParseUint(r.Body, 10, 64)
			if r.Status != 200 || err != nil || id >= 1<<63 {
				t.Fatalf("snowflake: %d %q", r.Status, r.Body)
			}
		})
	}
	wantLeafError(t, get(t, s.Handler(), "/api/segment/get/no-such-tag"), "Result{id=-2, status=EXCEPTION}", "/api/segment/get/no-such-tag")
	// An empty key matches no route, as in leaf-server.
	wantJSONError(t, get(t, s.Handler(), "/api/segment/get/"), 404, "not_found", "no route")
	store.Fail(errStoreDown)
	for range 1000 {
		r := get(t, s.Handler(), "/api/segment/get/leaf-segment-test")
		if r.Status != 200 {
			wantLeafError(t, r, "Result{id=-3, status=EXCEPTION}", "/api/segment/get/leaf-segment-test")
			break
		}
	}
	gen, _ := vestaGen(t)
	off := newServer(t, gen, rest.Config{})
	wantLeafError(t, get(t, off.Handler(), "/api/segment/get/x"), "Result{id=-1, status=EXCEPTION}", "/api/segment/get/x")
	// Snowflake IDs decode as the server's.
	id, _ := strconv.ParseUint(get(t, off.Handler(), "/api/snowflake/get/x").Body, 10, 64)
	if e := gen.Codec().Explain(core.ID(id)); e.Method != core.REST || e.Machine != 1022 {
		t.Errorf("snowflake ID %d explains as %+v", id, e)
	}
}

// TestLeafAPIFirstNumbers: for an existing row (max_id, step), Leaf's
// first number is max_id and the following ones count up, within the
// range and across the next.
func TestLeafAPIFirstNumbers(t *testing.T) {
	store := segment.NewMemStore()
	ctx := context.Background()
	if err := store.Create(ctx, segment.TagInfo{Tag: "leaf-segment-test", MaxID: 1000, Step: 3}); err != nil {
		t.Fatal(err)
	}
	is, err := segment.Open(ctx, store, segment.DefaultConfig())
	testkit.Closed(t, "segment.Open", is, err)
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{Sequences: is})
	for want := int64(1000); want < 1006; want++ {
		if r := get(t, s.Handler(), "/api/segment/get/leaf-segment-test"); r.Body != strconv.FormatInt(want, 10) {
			t.Fatalf("got %d %q; want %d", r.Status, r.Body, want)
		}
	}
}

// FuzzSeq: any tag and query on /v1/seq/{tag}, any key on Leaf's route:
// /v1/seq answers 200 with the numbers asked for, or a 4xx naming what is
// wrong, never a 5xx (the store is up); Leaf's route answers a number or
// Leaf's 500 for a key it does not know.
func FuzzSeq(f *testing.F) {
	for _, seed := range [][2]string{
		{"orders", ""}, {"orders", "count=3"}, {"orders", "count=0"}, {"orders", "count=101"}, {"nope", ""},
		{"bad tag", ""}, {"%zz", "count=%zz"}, {strings.Repeat("x", 200), "count=1&count=2"}, {"a:b.c-d_e", "count=99"},
	} {
		f.Add(seed[0], seed[1])
	}
	s, _, _ := seqServer(f, "orders", "a:b.c-d_e")
	f.Fuzz(func(t *testing.T, tag, raw string) {
		q := req(http.MethodGet, "/", "", "")
		q.URL.Path, q.URL.RawPath, q.URL.RawQuery = "/v1/seq/"+tag, "", raw
		r := doHandler(s, q)
		switch {
		case r.Status == http.StatusOK:
			var body struct {
				ID  string
				IDs []string
			}
			if err := json.Unmarshal([]byte(r.Body), &body); err != nil || (body.ID == "") == (len(body.IDs) == 0) {
				t.Fatalf("/v1/seq/%q?%s: 200 %s", tag, raw, r.Body)
			}
		case r.Status >= 500:
			t.Fatalf("/v1/seq/%q?%s: %d %s", tag, raw, r.Status, r.Body)
		}
		q = req(http.MethodGet, "/", "", "")
		q.URL.Path, q.URL.RawPath = "/api/segment/get/"+tag, ""
		r = doHandler(s, q)
		if r.Status == http.StatusOK {
			if _, err := strconv.ParseInt(r.Body, 10, 64); err != nil {
				t.Fatalf("Leaf %q: 200 %q", tag, r.Body)
			}
		} else if r.Status == 500 && !strings.Contains(r.Body, "Result{id=-2, status=EXCEPTION}") {
			t.Fatalf("Leaf %q: %d %s", tag, r.Status, r.Body)
		}
	})
}
