package conf_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/machineid"
)

// FuzzLoadYAML: whatever the file holds, Load and Validate never panic,
// every error is ErrConfig, and a
// Config that loads validates, prints and converts.
func FuzzLoadYAML(f *testing.F) {
	// One directory for the whole run: a new one per input would make
	// each execution (and the minimizing of long inputs) far slower.
	dir := f.TempDir()
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, fmt.Sprintf("%d.yaml", n.Add(1)))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		l, err := conf.Load(conf.Options{File: path, Env: noEnv})
		if err != nil {
			if !errors.Is(err, conf.ErrConfig) {
				t.Fatalf("error %v is not ErrConfig", err)
			}
			return
		}
		if err := l.Config.Validate(); err != nil {
			t.Fatalf("Load succeeded but Validate fails: %v", err)
		}
		_ = fmt.Sprintf("%v %+v %#v", l.Config, l.Config, l.Config)
		slog.New(slog.NewJSONHandler(io.Discard, nil)).Info("x", "c", l.Config)
		if _, err := l.Config.EmbedConfig(); err != nil && !errors.Is(err, machineid.ErrNoMachineID) {
			t.Fatalf("Embed: %v", err)
		}
	})
}
