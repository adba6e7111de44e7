package core_test

import (
	"fmt"
	"math/bits"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
)

// idLayoutsPage is the design's page of the ID, whose bit tables and last
// units this file holds to the codec.
const idLayoutsPage = "../docs/design/id-layouts.md"

var (
	reBitRow  = regexp.MustCompile(`(?m)^\| (seq|machine|method|time|type|version|sign)\b[^|]* \| ([^|]+) \|(?: ([^|]+) \|)?$`)
	reLastMax = regexp.MustCompile(`last unit starts (\S+)\s+\(max-peak\) or (\S+)\s+\(min-granularity\)`)
	reLastOne = regexp.MustCompile(`The last unit starts (\S+)\.`)
)

// section returns the text of the page from the heading that begins with
// prefix to the next heading.
func section(t *testing.T, page, prefix string) string {
	t.Helper()
	i := strings.Index(page, "\n## "+prefix)
	if i < 0 {
		t.Fatalf("%s: no heading %q", idLayoutsPage, prefix)
	}
	rest := page[i+1:]
	if j := strings.Index(rest[3:], "\n## "); j >= 0 {
		rest = rest[:j+3]
	}
	return rest
}

// span is the lowest and highest bit a field takes: every bit of its
// width set, every other field zero.
func span(t *testing.T, c core.Codec, typ core.Type, field string) string {
	t.Helper()
	f := core.Fields{Type: uint64(typ)}
	seqBits, timeBits := 20, 30
	if typ == core.MinGranularity {
		seqBits, timeBits = 10, 40
	}
	if c.Layout() == core.Leaf {
		seqBits, timeBits = 12, 41
	}
	var id core.ID
	switch field {
	case "seq":
		f.Seq = 1<<seqBits - 1
	case "machine":
		f.Machine = 1023
	case "method":
		f.Method = 3
	case "time":
		f.Time = 1<<timeBits - 1
	case "type":
		f.Type = 1
	case "version", "sign": // the leaf layout's bit 63 is its Version
		f.Version = 1
	}
	var err error
	if id, err = c.Make(f); err != nil {
		t.Fatalf("%s %s: Make(%+v): %v", c.Layout(), field, f, err)
	}
	if typ == core.MinGranularity && field != "type" && c.Layout() != core.Leaf {
		id &^= 1 << 62 // the type bit, set for every field of this column
	}
	lo, hi := bits.TrailingZeros64(uint64(id)), 63-bits.LeadingZeros64(uint64(id))
	switch {
	case field == "sign":
		return fmt.Sprintf("%d, always 0", lo)
	case lo == hi:
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// The bit tables of docs/design/id-layouts.md are the codec's: each
// field's bits, per layout and type, and the instant each layout's last
// unit starts.
func TestDesignPageOfTheID(t *testing.T) {
	text, err := os.ReadFile(idLayoutsPage)
	if err != nil {
		t.Fatal(err)
	}
	page := string(text)
	for _, tc := range []struct {
		heading string
		layout  core.Layout
	}{
		{"The `sorted` layout", core.Sorted},
		{"The `vesta` layout", core.Vesta},
		{"The `leaf` layout", core.Leaf},
	} {
		t.Run(tc.layout.String(), func(t *testing.T) {
			sec := section(t, page, tc.heading)
			c, err := core.NewCodec(tc.layout, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			types := []core.Type{core.MaxPeak, core.MinGranularity}
			if tc.layout == core.Leaf {
				types = []core.Type{core.MinGranularity}
			}
			rows := reBitRow.FindAllStringSubmatch(sec, -1)
			if len(rows) < 4 {
				t.Fatalf("%s: %d rows of its bit table", tc.heading, len(rows))
			}
			for _, r := range rows {
				for i, typ := range types {
					got := strings.TrimSpace(r[2+i])
					if tc.layout != core.Leaf && r[1] == "sign" {
						t.Errorf("%s: a sign row outside the leaf layout", tc.heading)
					}
					if want := span(t, c, typ, r[1]); got != want {
						t.Errorf("%s, %s: the page says bits %s; the codec puts it at %s", tc.heading, r[1], got, want)
					}
				}
			}
			var says []string
			if tc.layout == core.Leaf {
				if m := reLastOne.FindStringSubmatch(sec); m != nil {
					says = m[1:]
				}
			} else if m := reLastMax.FindStringSubmatch(sec); m != nil {
				says = m[1:]
			}
			if len(says) != len(types) {
				t.Fatalf("%s: no sentence \"the last unit starts …\" for each type", tc.heading)
			}
			for i, typ := range types {
				timeBits := map[core.Type]int{core.MaxPeak: 30, core.MinGranularity: 40}[typ]
				if tc.layout == core.Leaf {
					timeBits = 41
				}
				last, err := c.TransTime(typ, 1<<timeBits-1)
				if err != nil {
					t.Fatal(err)
				}
				if want := core.FormatInstant(typ, last); says[i] != want {
					t.Errorf("%s: the last %s unit starts %s, the page says %s", tc.heading, typ, want, says[i])
				}
			}
		})
	}
}
