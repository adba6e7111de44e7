package main

import (
	"os"
	"strings"
	"testing"
)

// The README's shell lines work as written: every `vesta` command of its
// sh blocks that issues, builds or explains IDs runs (pipes included) and
// exits 0; every `vesta serve` line chooses a machine ID or a config; and
// `make run` passes one. Lines that name remote servers are skipped (no
// such hosts here; TestGenThroughServers runs that form).
func TestREADMECommands(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(makefile), "vesta serve --machine ") {
		t.Error("make run does not pass --machine: there is no default machine ID")
	}
	t.Chdir(t.TempDir())
	ran := 0
	inSh := false
	for line := range strings.Lines(string(readme)) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "```"):
			inSh = line == "```sh"
			continue
		case !inSh:
			continue
		}
		line = strings.TrimPrefix(line, "$ ")
		if i := strings.Index(line, "  #"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if strings.HasPrefix(line, "make run") {
			continue
		}
		if !strings.HasPrefix(line, "vesta ") {
			continue
		}
		if strings.HasPrefix(line, "vesta serve") {
			if !strings.Contains(line, "--machine") && !strings.Contains(line, "--config") {
				t.Errorf("README: %q chooses no machine ID; serve refuses that", line)
			}
			continue
		}
		if strings.Contains(line, "--servers") {
			continue
		}
		if strings.HasPrefix(line, "vesta seq") {
			continue // needs a segment store: TestSeqCommands runs these on a real Redis
		}
		stdin := ""
		for stage := range strings.SplitSeq(line, " | ") {
			args := strings.Fields(strings.TrimPrefix(strings.TrimSpace(stage), "vesta "))
			r := cli(t, stdin, args...)
			if r.code != 0 {
				t.Errorf("README: %q: exit %d: %s", line, r.code, r.stderr)
				break
			}
			stdin = r.stdout
		}
		ran++
	}
	if ran < 4 {
		t.Fatalf("ran %d README commands; the README's sh blocks were not found", ran)
	}
}
