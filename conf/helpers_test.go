package conf_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/machineid"
)

// noEnv is an empty environment, so tests never read the process's.
var noEnv = []string{}

// otherProviders are the machine-ID providers but static: the ways to
// choose a machine ID that an error about a missing one must name.
func otherProviders() []string {
	var out []string
	for _, p := range machineid.Providers() {
		if p != machineid.ProviderStatic {
			out = append(out, p)
		}
	}
	return out
}

// writeFile writes content to a new file in a temporary directory.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadYAML loads content as the config file, with env as the environment.
func loadYAML(t testing.TB, content string, env ...string) (conf.Loaded, error) {
	t.Helper()
	if env == nil {
		env = noEnv
	}
	return conf.Load(conf.Options{File: writeFile(t, "vesta.yaml", content), Env: env})
}

// mustLoad fails the test on a Load error.
func mustLoad(t testing.TB, opts conf.Options) conf.Loaded {
	t.Helper()
	if opts.Env == nil {
		opts.Env = noEnv
	}
	l, err := conf.Load(opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return l
}

// nested turns the key path "a.b.c" and a value into {"a":{"b":{"c":v}}},
// written as JSON, which is YAML too.
func nested(t testing.TB, key string, v any) string {
	t.Helper()
	parts := strings.Split(key, ".")
	for i := len(parts) - 1; i >= 0; i-- {
		v = map[string]any{parts[i]: v}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantKeyErrors checks that err matches ErrConfig and names exactly the
// key (every joined error), with a message holding each of want.
func wantKeyErrors(t testing.TB, err error, key string, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one naming %s", key)
	}
	if !errors.Is(err, conf.ErrConfig) {
		t.Errorf("errors.Is(%v, ErrConfig) = false", err)
	}
	kes := conf.KeyErrors(err)
	if len(kes) == 0 {
		t.Fatalf("no *KeyError in %v", err)
	}
	for _, ke := range kes {
		if ke.Key != key {
			t.Errorf("error names %s; want only %s: %v", ke.Key, key, err)
		}
		if !strings.HasPrefix(ke.Error(), "conf: "+key+": ") {
			t.Errorf("message %q does not start with conf: %s: ", ke.Error(), key)
		}
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// machineIDOf is c.MachineIDConfig(), which must succeed.
func machineIDOf(t testing.TB, c conf.Config) machineid.Config {
	t.Helper()
	m, err := c.MachineIDConfig()
	if err != nil {
		t.Fatal(err)
	}
	return m
}
