package mask_test

import (
	"math"
	"testing"

	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/mask"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want mask.Text
		out  string // its String; "" refused
		why  string // a piece of the error
	}{
		{in: "0000000000000", want: mask.Text{}, out: "0000000000000"},
		{in: "fzzzzzzzzzzzz", want: mask.Text{Bits: math.MaxUint64}, out: "fzzzzzzzzzzzz"},
		{in: "g000000000000", want: mask.Text{Slot: 1}, out: "g000000000000"},
		{in: "zzzzzzzzzzzzz", want: mask.Text{Slot: 1, Bits: math.MaxUint64}, out: "zzzzzzzzzzzzz"},
		{in: "ord_0123456789abc", want: mask.Text{Kind: "ord", Bits: 0x008864298e84a96c}, out: "ord_0123456789abc"},
		{in: "ORD_0123456789ABC", want: mask.Text{Kind: "ORD", Bits: 0x008864298e84a96c}, out: "ord_0123456789abc"},
		// Crockford's readings: I and L are 1, O is 0.
		{in: "o1il000000000", want: mask.Text{Bits: 1<<55 | 1<<50 | 1<<45}, out: "0111000000000"},
		{in: "a1234567890123456_0000000000000", want: mask.Text{Kind: "a1234567890123456"}, why: "prefix"},
		{in: "", why: "want 13 characters"},
		{in: "000000000000", why: "want 13 characters"},
		{in: "00000000000000", why: "want 13 characters"},
		{in: "_0000000000000", why: "want 13 characters"},
		{in: "1ord_0000000000000", why: "a letter first"},
		{in: "or-d_0000000000000", why: "letters and digits"},
		{in: "ord_000000000000u", why: `character 13 is 'u'`},
		{in: "ord_00000000000-0", why: `character 12 is '-'`},
		{in: "ord_00000000000\x000", why: "byte 0x00"},
		{in: "ord 0000000000000", why: "want 13 characters"},
		{in: "0000000000000\n", why: "want 13 characters"},
	}
	for _, c := range cases {
		got, err := mask.Parse(c.in)
		if c.out == "" {
			if !errtest.Wraps(err, mask.ErrSyntax, c.why) {
				t.Errorf("Parse(%q) = %+v, %v; want ErrSyntax saying %q", c.in, got, err, c.why)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		if s := got.String(); s != c.out {
			t.Errorf("Parse(%q).String() = %q; want %q", c.in, s, c.out)
		}
	}
}

// Parsing a mask allocates nothing.
func TestParseAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	n := testing.AllocsPerRun(100, func() {
		if _, err := mask.Parse("ord_0123456789abc"); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("Parse allocates %.0f times", n)
	}
}
