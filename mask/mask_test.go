package mask_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/mask"
)

// Every ID comes back from its mask, exactly: 10^7 consecutive 64-bit
// values from an ID a server issued, and the two ends of the range,
// through the text and back; with the deployment's check, IDs as a server
// issues them (seq, carrying into the next second) pass it.
func TestRoundTrip(t *testing.T) {
	keys := mustKeys(t, keyLine(0, 1))
	off := mustMasker(t, keys, "acme", "ord", mask.Check{Off: true})
	checked := mustMasker(t, keys, "acme", "ord", serverCheck())
	n := count(10_000_000)
	t.Logf("%d consecutive IDs", n)
	start := issued(t, 0)
	buf := make([]byte, 0, 32)
	for i := range n {
		id := start + core.ID(i)
		buf = off.AppendMask(buf[:0], id)
		text := string(buf)
		if got, err := off.Unmask(text); err != nil || got != id {
			t.Fatalf("Unmask(Mask(%d)) = %d, %v (text %s)", id, got, err, text)
		}
		if i%1000 == 0 { // the check is the same arithmetic for all: a sample, as issued
			id := start + core.ID(i>>20)<<32 + core.ID(i&(1<<20-1)) // seq, carrying into the next second
			if got, err := checked.Unmask(checked.Mask(id)); err != nil || got != id {
				t.Fatalf("checked: Unmask(Mask(%d)) = %d, %v", id, got, err)
			}
		}
	}
	for _, id := range []core.ID{0, 1, math.MaxUint64, math.MaxUint64 - 1, 1 << 63} {
		text := off.Mask(id)
		if got, err := off.Unmask(text); err != nil || got != id {
			t.Errorf("Unmask(Mask(%d)) = %d, %v", id, got, err)
		}
		if !strings.HasPrefix(text, "ord_") || len(text) != 4+mask.TextLen {
			t.Errorf("Mask(%d) = %q; want ord_ and 13 characters", id, text)
		}
	}
}

// Masks of consecutive IDs show no order: the ranks of 10^6 masks (as
// texts sort) against those of their IDs, Spearman's rho, is within 0.01
// of 0, where 10^6 independent draws give about ±0.001.
func TestMasksShowNoOrder(t *testing.T) {
	m := mustMasker(t, mustKeys(t, keyLine(0, 2)), "", "", serverCheck())
	n := count(1_000_000)
	start := issued(t, 0)
	texts, plain := make([]string, n), make([]string, n)
	for i := range texts {
		texts[i] = m.Mask(start + core.ID(i))
		plain[i] = (start + core.ID(i)).String()
	}
	rho := spearman(texts)
	t.Logf("Spearman's rho of %d masks against their IDs: %.5f", n, rho)
	if math.Abs(rho) >= 0.01 {
		t.Errorf("Spearman's rho %.5f: the masks keep the IDs' order", rho)
	}
	if len(slices.Compact(slices.Sorted(slices.Values(texts)))) != n {
		t.Error("two IDs share a mask")
	}
	// The measure itself: the IDs' own texts are in order.
	if rho := spearman(plain); rho < 0.999 {
		t.Errorf("Spearman's rho of the IDs' decimals %.5f; want 1", rho)
	}
}

// spearman is Spearman's rho between the order of texts as strings sort
// and their order in the slice.
func spearman(texts []string) float64 {
	n := len(texts)
	order := make([]int, n) // order[r]: the index of the text of rank r
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(texts[a], texts[b]) })
	var d2 float64
	for r, i := range order {
		d := float64(r - i)
		d2 += d * d
	}
	nf := float64(n)
	return 1 - 6*d2/(nf*(nf*nf-1))
}

// A random 13-character text is refused at least 98% of the time under
// vesta serve's defaults (sorted layout, max-peak, the default machine
// ranges), measured on 200,000 texts with both key slots live and with
// one; the measured share matches Rejection, the share computed from the
// check. Other layouts are measured too, and their figures logged: the
// vesta and leaf layouts, whose epochs lie further back, fall below 98%
// unless mask.not_before narrows the times (checked here at a year).
func TestRandomTextsRefused(t *testing.T) {
	n := count(200_000)
	oneSlot := mustKeys(t, keyLine(0, 3))
	twoSlots := mustKeys(t, keyLine(0, 3)+"\n"+keyLine(1, 4)+"\ncurrent 1")
	codec := func(l core.Layout) core.Codec {
		c, err := core.NewCodec(l, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	yearAgo := now.AddDate(-1, 0, 0)
	cases := []struct {
		name      string
		check     mask.Check
		keys      *mask.Keys
		atLeast98 bool
	}{
		{"sorted max-peak, two slots", serverCheck(), twoSlots, true},
		{"sorted max-peak, one slot", serverCheck(), oneSlot, true},
		{"sorted min-granularity, two slots", withType(serverCheck(), core.MinGranularity), twoSlots, true},
		{"vesta max-peak, two slots", withCodec(serverCheck(), codec(core.Vesta)), twoSlots, false},
		{"vesta max-peak, one slot", withCodec(serverCheck(), codec(core.Vesta)), oneSlot, true},
		{"vesta max-peak, two slots, not_before a year ago", withSince(withCodec(serverCheck(), codec(core.Vesta)), yearAgo), twoSlots, true},
		{"leaf, two slots", withType(withCodec(serverCheck(), codec(core.Leaf)), core.MinGranularity), twoSlots, false},
		{"leaf, one slot", withType(withCodec(serverCheck(), codec(core.Leaf)), core.MinGranularity), oneSlot, false},
		{"leaf, two slots, not_before a year ago", withSince(withType(withCodec(serverCheck(), codec(core.Leaf)), core.MinGranularity), yearAgo), twoSlots, true},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const alpha = "0123456789abcdefghjkmnpqrstvwxyz"
	text := make([]byte, mask.TextLen)
	for _, c := range cases {
		m := mustMasker(t, c.keys, "acme", "", c.check)
		refused := 0
		for range n {
			for i := range text {
				text[i] = alpha[rng.IntN(32)]
			}
			if _, err := m.Unmask(string(text)); err != nil {
				if !errors.Is(err, mask.ErrImplausible) && !errors.Is(err, mask.ErrRetired) {
					t.Fatalf("%s: %q: %v; want ErrImplausible or ErrRetired", c.name, text, err)
				}
				refused++
			}
		}
		got, want := float64(refused)/float64(n), m.Rejection()
		t.Logf("%-48s refused %s of %d random texts (computed: %s)", c.name, mask.RejectionText(got), n, mask.RejectionText(want))
		// Binomial spread: 5 standard deviations.
		if sd := math.Sqrt(want * (1 - want) / float64(n)); math.Abs(got-want) > 5*sd+1e-4 {
			t.Errorf("%s: refused %.4f; Rejection says %.4f", c.name, got, want)
		}
		if c.atLeast98 != (got >= 0.98) {
			t.Errorf("%s: refused %.4f; want at least 0.98: %v", c.name, got, c.atLeast98)
		}
	}
}

// count is n, or a tenth of it under -short or -race (raceEnabled).
func count(n int) int {
	if testing.Short() || raceEnabled {
		return n / 10
	}
	return n
}

func withType(c mask.Check, typ core.Type) mask.Check     { c.Type = typ; return c }
func withCodec(c mask.Check, codec core.Codec) mask.Check { c.Codec = codec; return c }
func withSince(c mask.Check, t time.Time) mask.Check      { c.NotBefore = t; return c }

// A mask read as another tenant's, another kind's or a retired key's is
// refused, and the error says which.
func TestRefusedWithReason(t *testing.T) {
	keys := mustKeys(t, keyLine(0, 5)+"\n"+keyLine(1, 6)+"\ncurrent 0")
	check := serverCheck()
	acmeOrders := mustMasker(t, keys, "acme", "ord", check)
	ids := make([]core.ID, 200)
	texts := make([]string, len(ids))
	for i := range ids {
		ids[i] = issued(t, uint64(i*4999))
		texts[i] = acmeOrders.Mask(ids[i])
	}
	refusedAll := func(name string, m *mask.Masker, transform func(string) string, want error) {
		t.Helper()
		refused := 0
		for i, text := range texts {
			got, err := m.Unmask(transform(text))
			switch {
			case err == nil && got == ids[i]:
				t.Fatalf("%s: %s unmasked to its own ID", name, text)
			case err == nil: // a plausible ID of the wrong tenant: rare, counted
			case !errors.Is(err, want):
				t.Fatalf("%s: %v; want %v", name, err, want)
			default:
				refused++
			}
		}
		if share := float64(refused) / float64(len(texts)); share < 0.98 {
			t.Errorf("%s: refused %d of %d", name, refused, len(texts))
		}
	}
	same := func(s string) string { return s }
	bare := func(s string) string { return s[len("ord_"):] }
	refusedAll("another tenant", mustMasker(t, keys, "globex", "ord", check), same, mask.ErrImplausible)
	refusedAll("no tenant", mustMasker(t, keys, "", "ord", check), same, mask.ErrImplausible)
	refusedAll("another kind, with the prefix", mustMasker(t, keys, "acme", "usr", check), same, mask.ErrWrongKind)
	refusedAll("another kind, without the prefix", mustMasker(t, keys, "acme", "usr", check), bare, mask.ErrImplausible)
	refusedAll("no kind, with the prefix", mustMasker(t, keys, "acme", "", check), same, mask.ErrWrongKind)
	refusedAll("no kind, without the prefix", mustMasker(t, keys, "acme", "", check), bare, mask.ErrImplausible)
	refusedAll("slot 0 retired", mustMasker(t, mustKeys(t, keyLine(1, 6)), "acme", "ord", check), same, mask.ErrRetired)
	refusedAll("slot 0 holding another key", mustMasker(t, mustKeys(t, keyLine(0, 9)), "acme", "ord", check), same, mask.ErrImplausible)

	// The kind's prefix is the masker's kind, without regard to case; a
	// text without it is read as of the masker's kind.
	for _, text := range []string{texts[0], strings.ToUpper(texts[0]), bare(texts[0]), "OrD_" + bare(texts[0])} {
		if got, err := acmeOrders.Unmask(text); err != nil || got != ids[0] {
			t.Errorf("Unmask(%q) = %d, %v; want %d", text, got, err, ids[0])
		}
	}
	// The messages name the reason.
	_, err := mustMasker(t, keys, "acme", "usr", check).Unmask(texts[0])
	if err == nil || !strings.Contains(err.Error(), `a mask of kind "ord", not "usr"`) {
		t.Errorf("wrong kind: %v", err)
	}
	_, err = mustMasker(t, mustKeys(t, keyLine(1, 6)), "acme", "ord", check).Unmask(texts[0])
	if err == nil || !strings.Contains(err.Error(), "key slot 0, which holds no key") {
		t.Errorf("retired: %v", err)
	}
	_, err = mustMasker(t, keys, "globex", "ord", check).Unmask(texts[1])
	if err == nil || !strings.Contains(err.Error(), `no mask of tenant "globex", kind "ord"`) {
		t.Errorf("wrong tenant: %v", err)
	}
}

// Rotation: masks of the old slot stay readable while it holds its key,
// new masks use the current slot, and once the old slot is retired its
// masks are refused as such.
func TestRotation(t *testing.T) {
	check := serverCheck()
	id := issued(t, 42)
	v1 := mustMasker(t, mustKeys(t, keyLine(0, 7)), "acme", "ord", check)
	v2 := mustMasker(t, mustKeys(t, keyLine(0, 7)+"\n"+keyLine(1, 8)+"\ncurrent 1"), "acme", "ord", check)
	v3 := mustMasker(t, mustKeys(t, keyLine(1, 8)), "acme", "ord", check)
	old, fresh := v1.Mask(id), v2.Mask(id)
	if old == fresh {
		t.Fatalf("the new key masks %d as the old one did: %s", id, old)
	}
	if s := old[len("ord_")]; s > 'f' {
		t.Errorf("slot 0's mask %s starts with %c; want 0-f", old, s)
	}
	if s := fresh[len("ord_")]; s < 'g' {
		t.Errorf("slot 1's mask %s starts with %c; want g-z", fresh, s)
	}
	for _, c := range []struct {
		name string
		m    *mask.Masker
		text string
		err  error
	}{
		{"v1 reads its own", v1, old, nil},
		{"v2 reads the old", v2, old, nil},
		{"v2 reads its own", v2, fresh, nil},
		{"v3 reads v2's", v3, fresh, nil},
		{"v3 refuses the retired slot's", v3, old, mask.ErrRetired},
		{"v1 refuses the new slot's", v1, fresh, mask.ErrRetired},
	} {
		got, err := c.m.Unmask(c.text)
		if c.err == nil && (err != nil || got != id) || c.err != nil && !errors.Is(err, c.err) {
			t.Errorf("%s: Unmask(%s) = %d, %v; want %d, %v", c.name, c.text, got, err, id, c.err)
		}
	}
}

// The check refuses each field that no issuer of the deployment writes,
// and names it.
func TestCheck(t *testing.T) {
	check := serverCheck()
	check.NotBefore = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := mustMasker(t, mustKeys(t, keyLine(0, 10)), "", "", check)
	var c core.Codec
	unit, _ := c.Units(core.MaxPeak, now)
	since, _ := c.Units(core.MaxPeak, check.NotBefore)
	make := func(f core.Fields) core.ID {
		id, err := c.Make(f)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	cases := []struct {
		name string
		f    core.Fields
		why  string // "" accepted
	}{
		{"rest, server range, now", core.Fields{Method: 2, Machine: 1023, Time: unit}, ""},
		{"central, server range, the borrow and skew ahead", core.Fields{Method: 1, Machine: 924, Time: unit + 61}, ""},
		{"embedded, embedded range, not_before", core.Fields{Method: 0, Machine: 0, Time: since}, ""},
		{"too far ahead", core.Fields{Method: 2, Machine: 1023, Time: unit + 62}, "its time is ahead of the clock"},
		{"before not_before", core.Fields{Method: 2, Machine: 1023, Time: since - 1}, "before mask.not_before"},
		{"rest on an embedded machine", core.Fields{Method: 2, Machine: 923, Time: unit}, "outside its publish method's range"},
		{"embedded on a server machine", core.Fields{Method: 0, Machine: 924, Time: unit}, "outside its publish method's range"},
		{"method 3", core.Fields{Method: 3, Machine: 1000, Time: unit}, "publish method (3) is never issued"},
		{"version 1", core.Fields{Version: 1, Method: 2, Machine: 1023, Time: unit}, "version or type"},
		{"min-granularity", core.Fields{Type: 1, Method: 2, Machine: 1023, Time: unit * 1000}, "version or type"},
	}
	off := mustMasker(t, mustKeys(t, keyLine(0, 10)), "", "", mask.Check{Off: true})
	for _, tc := range cases {
		id := make(tc.f)
		got, err := m.Unmask(off.Mask(id))
		switch {
		case tc.why == "" && (err != nil || got != id):
			t.Errorf("%s: %v", tc.name, err)
		case tc.why != "" && (!errtest.Wraps(err, mask.ErrImplausible, tc.why)):
			t.Errorf("%s: %v; want ErrImplausible saying %q", tc.name, err, tc.why)
		}
	}
}

// A new ID passes once the clock has reached it: the bound kept between
// reads of the clock rises with it.
func TestCheckFollowsTheClock(t *testing.T) {
	at := now
	check := serverCheck()
	check.Now = func() time.Time { return at }
	m := mustMasker(t, mustKeys(t, keyLine(0, 11)), "", "", check)
	later := issued(t, 1) + core.ID(600)<<32 // ten minutes on
	text := m.Mask(later)
	if _, err := m.Unmask(text); !errors.Is(err, mask.ErrImplausible) {
		t.Fatalf("an ID ten minutes ahead: %v", err)
	}
	at = at.Add(10 * time.Minute)
	if got, err := m.Unmask(text); err != nil || got != later {
		t.Fatalf("ten minutes later: %d, %v", got, err)
	}
}
