package mask_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/mask"
)

// FuzzParse: any text either fails Parse with ErrSyntax, or parses to a
// Text whose String parses back to it (the kind in lower case), and which
// masks back to the same text (lower case, Crockford's readings undone);
// Unmask never panics and fails only with the package's errors.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0000000000000", "zzzzzzzzzzzzz", "ord_0123456789abc", "ORD_OIL0000000000", "u000000000000",
		"_0000000000000", "a_", "", "\xff\xfe", "ord_" + strings.Repeat("z", 14)} {
		f.Add(s)
	}
	keys, err := mask.ParseKeys(keyLine(0, 1) + "\n" + keyLine(1, 2) + "\ncurrent 1")
	if err != nil {
		f.Fatal(err)
	}
	off, err := mask.New(mask.Config{Keys: keys, Kind: "ord", Check: mask.Check{Off: true}})
	if err != nil {
		f.Fatal(err)
	}
	checked, err := mask.New(mask.Config{Keys: keys, Kind: "ord", Check: serverCheck()})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		txt, err := mask.Parse(s)
		if err != nil {
			if !errors.Is(err, mask.ErrSyntax) {
				t.Fatalf("Parse(%q): %v; want ErrSyntax", s, err)
			}
		} else {
			back, err := mask.Parse(txt.String())
			want := txt
			want.Kind = strings.ToLower(txt.Kind)
			if err != nil || back != want {
				t.Fatalf("Parse(%q) = %+v; its String %q parses to %+v, %v", s, txt, txt.String(), back, err)
			}
			if txt.Kind == "" || strings.EqualFold(txt.Kind, "ord") {
				id, err := off.Unmask(s)
				if err != nil {
					t.Fatalf("Unmask(%q) with no check: %v", s, err)
				}
				if txt.Slot == 1 {
					if m := off.Mask(id); m != "ord_"+txt.String()[len(txt.String())-mask.TextLen:] {
						t.Fatalf("Mask(Unmask(%q)) = %q", s, m)
					}
				}
			}
		}
		if _, err := checked.Unmask(s); err != nil && !errors.Is(err, mask.ErrSyntax) && !errors.Is(err, mask.ErrWrongKind) &&
			!errors.Is(err, mask.ErrImplausible) && !errors.Is(err, mask.ErrRetired) {
			t.Fatalf("Unmask(%q): %v", s, err)
		}
	})
}
