package conf_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
)

func TestSearchPath(t *testing.T) {
	sep := string(filepath.Separator)
	for _, tc := range []struct {
		env       []string
		want      []string
		wantState string
	}{
		{[]string{"HOME=/home/u"}, []string{"." + sep + "vesta.yaml", "/home/u/.config/vesta/vesta.yaml", "/etc/vesta/vesta.yaml"}, "/home/u/.local/state/vesta"},
		{[]string{"HOME=/home/u", "XDG_CONFIG_HOME=/x/c", "XDG_STATE_HOME=/x/s"}, []string{"." + sep + "vesta.yaml", "/x/c/vesta/vesta.yaml", "/etc/vesta/vesta.yaml"}, "/x/s/vesta"},
		// The XDG specification ignores relative paths.
		{[]string{"HOME=/home/u", "XDG_CONFIG_HOME=rel", "XDG_STATE_HOME=rel"}, []string{"." + sep + "vesta.yaml", "/home/u/.config/vesta/vesta.yaml", "/etc/vesta/vesta.yaml"}, "/home/u/.local/state/vesta"},
		{[]string{}, []string{"." + sep + "vesta.yaml", "/etc/vesta/vesta.yaml"}, ""},
	} {
		if got := conf.SearchPath(tc.env); !slices.Equal(got, tc.want) {
			t.Errorf("SearchPath(%q) = %q; want %q", tc.env, got, tc.want)
		}
		if got := conf.StateDir(tc.env); got != tc.wantState {
			t.Errorf("StateDir(%q) = %q; want %q", tc.env, got, tc.wantState)
		}
	}
}

// The first file of the search path that exists is read, unless a file is
// named (Options.File, VESTA_CONFIG) or none is asked for (NoFile,
// VESTA_CONFIG set to "").
func TestSearch(t *testing.T) {
	dir := t.TempDir()
	first, second, named := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml"), filepath.Join(dir, "named.yaml")
	missing := filepath.Join(dir, "missing.yaml")
	write := func(path, layout string) {
		if err := os.WriteFile(path, []byte("id: {layout: "+layout+"}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(second, "vesta")
	write(named, "leaf")
	for _, tc := range []struct {
		name     string
		opts     conf.Options
		wantFile string
		found    bool
	}{
		{"first missing, second found", conf.Options{Search: []string{missing, second}}, second, true},
		{"named file wins", conf.Options{File: named, Search: []string{second}}, named, false},
		{"VESTA_CONFIG wins", conf.Options{Env: []string{"VESTA_CONFIG=" + named}, Search: []string{second}}, named, false},
		{"VESTA_CONFIG empty reads none", conf.Options{Env: []string{"VESTA_CONFIG="}, Search: []string{second}}, "", false},
		{"NoFile reads none", conf.Options{NoFile: true, File: named, Env: []string{"VESTA_CONFIG=" + named}, Search: []string{second}}, "", false},
		{"nothing found", conf.Options{Search: []string{missing}}, "", false},
		{"no search", conf.Options{}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := mustLoad(t, tc.opts)
			if l.File != tc.wantFile || l.Found != tc.found {
				t.Errorf("File %q, Found %v; want %q, %v", l.File, l.Found, tc.wantFile, tc.found)
			}
		})
	}
	write(first, "sorted")
	if l := mustLoad(t, conf.Options{Search: []string{first, second}}); l.File != first || l.Config.ID.Layout != core.Sorted {
		t.Errorf("File %q, layout %v; want the first, sorted", l.File, l.Config.ID.Layout)
	}
	// A directory in the way is an error, not a reason to read the next.
	if _, err := conf.Load(conf.Options{Env: noEnv, Search: []string{dir, second}}); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory on the search path: %v", err)
	}
}

// A machine ID set above the providers (a flag over the file's) that they
// would not use is refused, never silently replaced by a lease.
func TestMachineIDOutranked(t *testing.T) {
	file := writeFile(t, "vesta.yaml", "machine:\n  providers: [redis, static]\n  redis: {addrs: [\"127.0.0.1:1\"], embedded_range: 100-109}\n")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	conf.AddFlags(fs, "machine")
	if err := fs.Parse([]string{"--machine", "5"}); err != nil {
		t.Fatal(err)
	}
	_, err := conf.Load(conf.Options{File: file, Env: noEnv, Flags: fs})
	kes := conf.KeyErrors(err)
	if len(kes) != 1 || kes[0].Key != "machine.id" || kes[0].Source != "flag --machine" ||
		!strings.Contains(kes[0].Msg, "would not be used: machine.providers redis,static (file "+file+") tries redis first") {
		t.Fatalf("flag over the file's providers: %v", err)
	}
	if _, err := conf.Load(conf.Options{File: file, Env: []string{"VESTA_MACHINE_ID=5"}}); !strings.Contains(fmtErr(err), "(env VESTA_MACHINE_ID)") {
		t.Errorf("env over the file's providers: %v", err)
	}
	// One source's own order is its choice: a static fallback after a lease.
	mustLoad(t, conf.Options{File: writeFile(t, "v.yaml", "machine:\n  providers: [redis, static]\n  id: 5\n  redis: {addrs: [\"127.0.0.1:1\"], embedded_range: 100-109}\n")})
	// Static first: the flag's ID is the one used.
	mustLoad(t, conf.Options{File: writeFile(t, "v.yaml", "machine:\n  providers: [static, redis]\n  redis: {addrs: [\"127.0.0.1:1\"], embedded_range: 100-109}\n"), Flags: fs})
}

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestRequireMachineIn(t *testing.T) {
	id := func(n int) conf.Config {
		c := conf.DefaultConfig()
		c.Machine.ID = &n
		return c
	}
	for _, tc := range []struct {
		cfg    conf.Config
		method core.Method
		want   string // "" = nil
	}{
		{id(5), core.Embedded, ""},
		{id(950), core.Central, ""},
		{id(950), core.Embedded, "machine.id: 950 lies outside machine.embedded_range 0-923, where embedded issuers"},
		{id(5), core.REST, "machine.id: 5 lies outside machine.server_range 924-1023, where servers (vesta serve)"},
		{conf.DefaultConfig(), core.Embedded, "machine.id: unset"},
	} {
		err := tc.cfg.RequireMachineIn(tc.method)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v %v: %v", tc.cfg.Machine.ID, tc.method, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, conf.ErrConfig) {
			t.Errorf("%v %v: %v; want %q", *tc.cfg.Machine.ID, tc.method, err, tc.want)
		}
		if tc.cfg.Machine.ID != nil && !errors.Is(err, machineid.ErrRange) {
			t.Errorf("%v: does not match machineid.ErrRange", err)
		}
	}
}

// Settings: every key once, in order, with its source; secrets masked, a
// DSN's password only. Attribute names the source in a later check's error.
func TestSettingsAndAttribute(t *testing.T) {
	tokenFile := writeFile(t, "token", "s3cret-token-of-32-bytes-or-more\n")
	file := writeFile(t, "vesta.yaml", "segment:\n  store: mysql\n  dsn: \"leaf:hunter2@tcp(db:3306)/leaf\"\nrest:\n  token_file: "+tokenFile+"\n")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	conf.AddFlags(fs, "machine")
	if err := fs.Parse([]string{"--machine", "950"}); err != nil {
		t.Fatal(err)
	}
	l := mustLoad(t, conf.Options{File: file, Env: []string{"VESTA_ID_LAYOUT=vesta"}, Flags: fs})
	got := map[string]conf.Setting{}
	var keys []string
	for _, s := range l.Settings() {
		got[s.Key] = s
		keys = append(keys, s.Key)
	}
	if !slices.Equal(keys, conf.Keys()) {
		t.Errorf("Settings keys:\n%v\nwant:\n%v", keys, conf.Keys())
	}
	for _, want := range []conf.Setting{
		{Key: "id.layout", Value: "vesta", Source: "env VESTA_ID_LAYOUT"},
		{Key: "id.type", Value: "max-peak", Source: "default"},
		{Key: "machine.id", Value: "950", Source: "flag --machine"},
		{Key: "segment.store", Value: "mysql", Source: "file " + file},
		{Key: "segment.dsn", Value: "leaf:[redacted]@tcp(db:3306)/leaf", Source: "file " + file},
		{Key: "rest.token", Value: "[redacted]", Source: "rest.token_file " + tokenFile},
		{Key: "central.idle_timeout", Value: "5m0s", Source: "default"},
	} {
		if got[want.Key] != want {
			t.Errorf("%s: %+v; want %+v", want.Key, got[want.Key], want)
		}
	}
	for _, s := range l.Settings() {
		if strings.Contains(s.Value, "hunter2") || strings.Contains(s.Value, "s3cret") {
			t.Errorf("%s shows a secret: %q", s.Key, s.Value)
		}
	}
	err := l.Attribute(l.Config.RequireMachineIn(core.Embedded))
	if kes := conf.KeyErrors(err); len(kes) != 1 || kes[0].Source != "flag --machine" || !strings.HasSuffix(err.Error(), "(flag --machine)") {
		t.Errorf("Attribute: %v", err)
	}
}
