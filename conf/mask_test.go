package conf_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/mask"
)

const (
	maskSecret0 = "c2VjcmV0IGZvciB0aGUgZXhhbXBsZSBvbmx5IQ==" // "secret for the example only!"
	maskSecret1 = "YW5vdGhlciBzZWNyZXQgZm9yIHRoZSB0ZXN0cyE=" // "another secret for the tests!"
)

// The masking key comes from a file or the environment (lines separated
// by ";" there), is never shown, and is refused with its key named when
// it cannot be used; without one, Masks says masking is off, naming the
// keys that would turn it on.
func TestMaskKey(t *testing.T) {
	file := writeFile(t, "mask.key", "# keys\nslot 0 "+maskSecret0+"\nslot 1 "+maskSecret1+"\ncurrent 1\n")
	for _, env := range [][]string{
		{"VESTA_MASK_KEY_FILE=" + file},
		{"VESTA_MASK_KEY=slot 0 " + maskSecret0 + "; slot 1 " + maskSecret1 + "; current 1"},
	} {
		l := mustLoad(t, conf.Options{Env: env})
		ms, err := l.Config.Masks(nil)
		if err != nil {
			t.Fatalf("%s: Masks: %v", env, err)
		}
		if ms.Keys().String() != "slots 0 and 1, current 1" {
			t.Errorf("%s: keys %s", env, ms.Keys())
		}
		for _, out := range []string{l.Config.String(), fmt.Sprintf("%+v %#v", l.Config, l.Config.Redacted())} {
			if strings.Contains(out, maskSecret0[:12]) || strings.Contains(out, maskSecret1[:12]) {
				t.Fatalf("a secret is shown: %s", out)
			}
		}
	}
	if src := mustLoad(t, conf.Options{Env: []string{"VESTA_MASK_KEY_FILE=" + file}}).Source("mask.key"); src != "mask.key_file "+file {
		t.Errorf("Source(mask.key) = %q", src)
	}

	_, err := conf.Load(conf.Options{Env: []string{"VESTA_MASK_KEY=slot 0 " + maskSecret0, "VESTA_MASK_KEY_FILE=" + file}})
	wantKeyErrors(t, err, "mask.key_file", "set together with mask.key")
	_, err = conf.Load(conf.Options{Env: []string{"VESTA_MASK_KEY_FILE=" + writeFile(t, "bad.key", "slot 0 "+maskSecret0+"\nslot 1 "+maskSecret0+"\ncurrent 0\n")}})
	wantKeyErrors(t, err, "mask.key", "slots 0 and 1 hold the same secret")
	if err == nil || strings.Contains(err.Error(), maskSecret0[:12]) || !strings.Contains(err.Error(), "(mask.key_file ") {
		t.Errorf("a bad key file: %v; want its file named and its secret not shown", err)
	}
	_, err = conf.Load(conf.Options{Env: []string{"VESTA_MASK_KEY_FILE=" + t.TempDir() + "/missing"}})
	wantKeyErrors(t, err, "mask.key_file", "no such file")

	_, err = mustLoad(t, conf.Options{Env: []string{}}).Config.Masks(nil)
	var ke *conf.KeyError
	if !errors.Is(err, mask.ErrNoKeys) || !errors.As(err, &ke) || ke.Key != "mask.key_file" || !strings.Contains(err.Error(), "VESTA_MASK_KEY") {
		t.Errorf("no key: %v; want a KeyError naming mask.key_file and matching mask.ErrNoKeys", err)
	}
}

// The check is the id and machine sections' and mask.not_before.
func TestMaskCheck(t *testing.T) {
	l := mustLoad(t, conf.Options{File: writeFile(t, "v.yaml", `
id: {layout: vesta, type: min-granularity, version: 1, max_borrow: 2s}
machine: {embedded_range: 0-99, server_range: 1000-1023}
mask: {not_before: "2026-01-01T00:00:00Z"}
`), Env: []string{}})
	c, err := l.Config.MaskCheck()
	if err != nil {
		t.Fatal(err)
	}
	want := mask.Check{Type: core.MinGranularity, Version: 1, MaxBorrow: 2 * time.Second,
		Embedded: core.MachineRange{First: 0, Count: 100}, Server: core.MachineRange{First: 1000, Count: 24},
		NotBefore: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	want.Codec, _ = core.NewCodec(core.Vesta, time.Time{})
	if c.Now != nil {
		t.Error("MaskCheck sets Now")
	}
	if c.Now = nil; !reflect.DeepEqual(c, want) {
		t.Errorf("MaskCheck = %+v;\nwant %+v", c, want)
	}
	_, err = conf.Load(conf.Options{File: writeFile(t, "v.yaml", "mask: {not_before: yesterday}"), Env: []string{}})
	wantKeyErrors(t, err, "mask.not_before", `"yesterday"; want an RFC 3339 instant`)
}
