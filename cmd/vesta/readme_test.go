package main

import (
	"os"
	"strings"
	"testing"
)

// The README's shell lines work as written: every `vesta` command of its
// sh blocks that issues, builds or explains IDs runs (pipes included) and
// exits as its comment says (0 unless "# exit N"); every `vesta serve`
// line chooses a machine ID or a config; and `make run` passes one. Lines
// that name remote servers are skipped (no such hosts here;
// TestGenThroughServers runs that form). docs/cli.md's lines run in
// TestCLIDocCommands, on the same reader (mdshell_test.go).
func TestREADMECommands(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(makefile), "vesta serve --machine ") {
		t.Error("make run does not pass --machine: there is no default machine ID")
	}
	lines := shellLines(t, "../../README.md")
	t.Chdir(t.TempDir())
	ran := 0
	for _, l := range lines {
		args, ok := isVesta(l.text)
		if !ok {
			continue
		}
		if len(args) > 0 && args[0] == "serve" {
			if !strings.Contains(l.text, "--machine") && !strings.Contains(l.text, "--config") {
				t.Errorf("README: %q chooses no machine ID; serve refuses that", l.text)
			}
			continue
		}
		if strings.Contains(l.text, "--servers") || strings.Contains(l.text, "--url") {
			continue
		}
		if len(args) > 0 && args[0] == "seq" {
			continue // needs a segment store: TestSeqCommands runs these on a real Redis
		}
		if r := runPipeline(t, l.text); r.code != l.code {
			t.Errorf("README: %q: exit %d; want %d: %s", l.text, r.code, l.code, r.stderr)
		}
		ran++
	}
	if ran < 4 {
		t.Fatalf("ran %d README commands; the README's sh blocks were not found", ran)
	}
}
