package mask_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/mask"
)

func TestParseKeys(t *testing.T) {
	s3, s4 := base64.StdEncoding.EncodeToString(secret(3)), base64.StdEncoding.EncodeToString(secret(4))
	short := base64.StdEncoding.EncodeToString(make([]byte, 15))
	cases := []struct {
		name, text string
		current    int    // -1: refused
		slots      string // Keys.String
		why        string
	}{
		{"one slot", "slot 0 " + s3, 0, "slot 0 only", ""},
		{"slot 1 alone", "slot 1 " + s3, 1, "slot 1 only", ""},
		{"two, current named", "# comment\n\nslot 0 " + s3 + "\nslot 1 " + s4 + "\ncurrent 1\n", 1, "slots 0 and 1, current 1", ""},
		{"semicolons and CRLF", "slot 0 " + s3 + "; slot 1 " + s4 + "\r\n; current 0", 0, "slots 0 and 1, current 0", ""},
		{"unpadded", "slot 0 " + strings.TrimRight(base64.StdEncoding.EncodeToString(secret(3)[:31]), "="), 0, "slot 0 only", ""},
		{"empty", "", -1, "", "no slot holds a key"},
		{"comments only", "# nothing", -1, "", "no slot holds a key"},
		{"two without current", "slot 0 " + s3 + "\nslot 1 " + s4, -1, "", `want a line "current N"`},
		{"current without key", "slot 0 " + s3 + "\ncurrent 1", -1, "", "current slot 1 holds no key"},
		{"same secret twice", "slot 0 " + s3 + "\nslot 1 " + s3 + "\ncurrent 1", -1, "", "the same secret"},
		{"slot twice", "slot 0 " + s3 + "\nslot 0 " + s4, -1, "", "line 2: slot 0 set twice"},
		{"slot 2", "slot 2 " + s3, -1, "", `slot "2"; want 0 or 1`},
		{"short secret", "slot 0 " + short, -1, "", "15 bytes; want at least 16"},
		{"not base64", "slot 0 not*base64*at*all*but*long", -1, "", "not base64 (value not shown)"},
		{"unknown line", "key 0 " + s3, -1, "", `line 1 begins "key"`},
		{"a bare secret", s3, -1, "", "line 1 does not begin with slot or current (its text not shown)"},
		{"current twice", "slot 0 " + s3 + "\ncurrent 0\ncurrent 0", -1, "", "current given twice"},
	}
	for _, c := range cases {
		k, err := mask.ParseKeys(c.text)
		if c.current < 0 {
			if !errtest.Wraps(err, mask.ErrKeys, c.why) {
				t.Errorf("%s: %v; want ErrKeys saying %q", c.name, err, c.why)
			}
			if err != nil && (strings.Contains(err.Error(), s3[:12]) || strings.Contains(err.Error(), "long")) {
				t.Errorf("%s: the error shows the secret: %v", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if k.Current() != c.current || k.String() != c.slots {
			t.Errorf("%s: current %d, %s; want %d, %s", c.name, k.Current(), k, c.current, c.slots)
		}
		for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
			if out := fmt.Sprintf(f, k); strings.Contains(out, s3[:8]) || strings.Contains(out, s4[:8]) {
				t.Errorf("%s: %s shows a secret: %s", c.name, f, out)
			}
		}
	}
}

func TestReadKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mask.key")
	if err := os.WriteFile(path, []byte(keyLine(0, 1)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := mask.ReadKeyFile(path)
	if err != nil || k.Current() != 0 {
		t.Fatalf("ReadKeyFile: %v, %v", k, err)
	}
	if _, err := mask.ReadKeyFile(filepath.Join(dir, "missing")); !errors.Is(err, mask.ErrKeys) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte("slot 0 x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mask.ReadKeyFile(path); !errtest.Wraps(err, mask.ErrKeys, path) {
		t.Errorf("bad file: %v; want ErrKeys naming the path", err)
	}
}

func TestNewKeys(t *testing.T) {
	if _, err := mask.NewKeys(-1, secret(1), nil); err != nil {
		t.Error(err)
	}
	if _, err := mask.NewKeys(0, secret(1)[:15], nil); !errors.Is(err, mask.ErrKeys) {
		t.Errorf("short: %v", err)
	}
	if _, err := mask.NewKeys(2, secret(1), secret(2)); !errors.Is(err, mask.ErrKeys) {
		t.Errorf("current 2: %v", err)
	}
	// The slots' secrets are copied: a caller's later change is not seen.
	s := secret(1)
	k, err := mask.NewKeys(0, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := mustMasker(t, k, "", "", mask.Check{Off: true}).Mask(1)
	s[0] ^= 1
	if after := mustMasker(t, k, "", "", mask.Check{Off: true}).Mask(1); after != before {
		t.Error("NewKeys kept the caller's slice")
	}
}

// Tenants and kinds: what names are taken, and that each pair is a key of
// its own.
func TestNames(t *testing.T) {
	keys := mustKeys(t, keyLine(0, 1))
	for _, c := range []struct {
		tenant, kind string
		ok           bool
	}{
		{"", "", true},
		{"acme", "ord", true},
		{"ACME Inc. (東京)", "Ord2", true},
		{strings.Repeat("t", mask.MaxTenantLen), strings.Repeat("k", mask.MaxKindLen), true},
		{strings.Repeat("t", mask.MaxTenantLen+1), "", false},
		{"", strings.Repeat("k", mask.MaxKindLen+1), false},
		{"a\nb", "", false},
		{"\xff", "", false},
		{"", "2ord", false},
		{"", "o_rd", false},
		{"", "ord-x", false},
	} {
		_, err := mask.New(mask.Config{Keys: keys, Tenant: c.tenant, Kind: c.kind, Check: mask.Check{Off: true}})
		if c.ok != (err == nil) || err != nil && !errors.Is(err, mask.ErrName) {
			t.Errorf("tenant %q kind %q: %v; want ok %v", c.tenant, c.kind, err, c.ok)
		}
	}
	seen := map[string]string{}
	for _, tk := range [][2]string{{"a", "bc"}, {"ab", "c"}, {"", "abc"}, {"abc", ""}, {"a", "b"}, {"b", "a"}, {"x", "k"}, {"y", "k"}} {
		m := mustMasker(t, keys, tk[0], tk[1], mask.Check{Off: true})
		text := m.Mask(1)
		text = text[len(text)-mask.TextLen:]
		if other, dup := seen[text]; dup {
			t.Errorf("tenant/kind %v and %s mask 1 alike", tk, other)
		}
		seen[text] = fmt.Sprint(tk)
	}
	// Kinds are case-insensitive: one kind, one key.
	if a, b := mustMasker(t, keys, "t", "Ord", mask.Check{Off: true}).Mask(7), mustMasker(t, keys, "t", "ord", mask.Check{Off: true}).Mask(7); a != b {
		t.Errorf("kind Ord masks as %s, ord as %s", a, b)
	}
	if _, err := mask.New(mask.Config{Tenant: "t"}); !errors.Is(err, mask.ErrNoKeys) {
		t.Errorf("no keys: %v", err)
	}
}
