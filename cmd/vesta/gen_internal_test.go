package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/vesta-go/vesta/conf"
)

// TestOpenIssuerFailsWithNil: an issuer that cannot open is a nil Issuer
// beside the error, not a nil *embed.Issuer inside a non-nil one (which a
// caller's `is != nil` check would take for an issuer and close).
func TestOpenIssuerFailsWithNil(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := conf.DefaultConfig()
	cfg.Machine.ID = new(7)
	cfg.TimeGuard.DataDir = notDir // the mark's directory is a file
	is, err := openIssuer(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		is.Close()
		t.Fatal("openIssuer with a file for time_guard.dir: no error")
	}
	if is != nil {
		t.Errorf("openIssuer failed (%v) with a non-nil Issuer %#v", err, is)
	}
}
