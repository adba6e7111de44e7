package rest_test

import (
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/rest"
)

// ceilingGen is a min-granularity generator (1024 IDs a millisecond, no
// borrowing) on a manual clock, with its current unit spent.
func ceilingGen(t *testing.T) (*core.Generator, *core.ManualClock) {
	t.Helper()
	return ceilingGenOf(t, core.Vesta)
}

// ceilingGenOf is ceilingGen in layout (Leaf's: 4096 IDs a millisecond).
func ceilingGenOf(t *testing.T, layout core.Layout) (*core.Generator, *core.ManualClock) {
	t.Helper()
	gen, clock := newGen(t, core.Config{Layout: layout, Type: core.MinGranularity, Machine: 7})
	if _, d, err := gen.TryAppendIDs(core.REST, nil, core.MaxCount); err != nil || d <= 0 {
		t.Fatalf("spending the unit: %v, %v", d, err)
	}
	return gen, clock
}

// TestCeilingWaitsThenAnswers: a batch past the ceiling waits for the
// clock and gets every ID, in order, in each layout.
func TestCeilingWaitsThenAnswers(t *testing.T) {
	for _, tc := range []struct {
		layout core.Layout
		count  int // two units' worth, nearly
	}{{core.Vesta, 2000}, {core.Leaf, 8000}} {
		t.Run(tc.layout.String(), func(t *testing.T) { testCeilingWaitsThenAnswers(t, tc.layout, tc.count) })
	}
}

func testCeilingWaitsThenAnswers(t *testing.T, layout core.Layout, count int) {
	gen, clock := ceilingGenOf(t, layout)
	s := newServer(t, gen, rest.Config{})
	got := make(chan response, 1)
	go func() { got <- get(t, s.Handler(), "/v1/ids?count="+strconv.Itoa(count)) }()
	for range 2 { // two units
		waittest.Sleepers(t, clock, 1)
		clock.Advance(time.Millisecond)
	}
	r := <-got
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	var body struct{ IDs []string }
	decode(t, r.Body, &body)
	if len(body.IDs) != count {
		t.Fatalf("%d IDs", len(body.IDs))
	}
	var last uint64
	for _, s := range body.IDs {
		id, _ := strconv.ParseUint(s, 10, 64)
		if id <= last {
			t.Fatalf("ID %d after %d", id, last)
		}
		last = id
	}
}

// TestCeilingRetryAfter: a wait that would outlast the request's deadline
// is a 503 unavailable with Retry-After at once.
func TestCeilingRetryAfter(t *testing.T) {
	gen, _ := ceilingGen(t)
	s := newServer(t, gen, rest.Config{MaxBatch: 1 << 20, RequestTimeout: 100 * time.Millisecond})
	// 2^20 IDs take 1024 units of a millisecond (the unit in progress is
	// spent): 1.025s, past the deadline.
	r := get(t, s.Handler(), "/v1/ids?count=1048576")
	wantJSONError(t, r, 503, "unavailable", "past the request's deadline")
	if ra := r.Header.Get("Retry-After"); ra != "2" {
		t.Fatalf("Retry-After %q; want 2 (1.025s rounded up)", ra)
	}
}

// TestCeilingBoundedAndClosed: past MaxWaitingCalls a request is refused at
// once (503, Retry-After); closing the server returns the requests that
// wait, with 503s.
func TestCeilingBoundedAndClosed(t *testing.T) {
	gen, clock := ceilingGen(t)
	s, err := rest.NewServer(gen, rest.Config{MaxWaitingCalls: 1, RequestTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan response, 1)
	go func() { got <- get(t, s.Handler(), "/v1/ids?count=2000") }()
	waittest.Sleepers(t, clock, 1) // it waits
	for _, path := range []string{"/v1/ids?count=10", "/v1/id"} {
		r := get(t, s.Handler(), path)
		wantJSONError(t, r, 503, "unavailable", "wait")
		if ra := r.Header.Get("Retry-After"); ra != "1" {
			t.Fatalf("%s: Retry-After %q; want 1", path, ra)
		}
	}
	r := get(t, s.Handler(), "/genid")
	wantTextError(t, r, 503, "unavailable", "wait")
	s.Close()
	wantJSONError(t, <-got, 503, "unavailable", "closed")
}

func TestCeilingConfig(t *testing.T) {
	gen, _ := vestaGen(t)
	for _, tt := range []struct {
		cfg   rest.Config
		field string
	}{
		{rest.Config{MaxWaitingIDs: -1}, "MaxWaitingIDs"},
		{rest.Config{MaxWaitingCalls: -1}, "MaxWaitingCalls"},
		{rest.Config{MaxWaitingIDs: 1<<30 + 1}, "MaxWaitingIDs"},
	} {
		if _, err := rest.NewServer(gen, tt.cfg); !errtest.Wraps(err, rest.ErrConfig, tt.field) {
			t.Errorf("NewServer(%+v): %v; want ErrConfig naming %s", tt.cfg, err, tt.field)
		}
	}
}

// TestCeilingFairBetweenClients: requests of one client address waiting in
// bulk do not hold up another address's request by more than a tick.
func TestCeilingFairBetweenClients(t *testing.T) {
	gen, clock := ceilingGen(t)
	s := newServer(t, gen, rest.Config{RequestTimeout: time.Minute})
	from := func(addr, target string) response {
		q := req("GET", target, "", "")
		q.RemoteAddr = addr
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, q)
		return response{rec.Code, rec.Header(), rec.Body.String()}
	}
	type answer struct {
		who string
		r   response
	}
	answers := make(chan answer, 5)
	for range 4 {
		go func() { answers <- answer{"greedy", from("192.0.2.1:1000", "/v1/ids?count=3000")} }()
	}
	waittest.Sleepers(t, clock, 1)
	waittest.Until(t, "the four greedy calls queued", func() bool { return rest.WaitingCalls(s) == 4 })
	go func() { answers <- answer{"light", from("192.0.2.2:2000", "/v1/ids?count=10")} }()
	waittest.Until(t, "the light call queued behind them", func() bool { return rest.WaitingCalls(s) == 5 })
	// 12010 IDs at 1024 a tick: the light request is served in the first.
	var order []string
	waittest.Until(t, "five answers", func() bool {
		for {
			select {
			case a := <-answers:
				if a.r.Status != 200 {
					t.Fatalf("%s: %d %s", a.who, a.r.Status, a.r.Body)
				}
				order = append(order, a.who)
				continue
			default:
			}
			break
		}
		if len(order) == 5 {
			return true
		}
		if clock.Waiters() > 0 {
			clock.Advance(time.Millisecond)
		}
		return false
	})
	if order[0] != "light" {
		t.Fatalf("answered in the order %v; want the light client first", order)
	}
}
