package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/cli.md's shell lines work as written, from an empty directory
// holding a copy of vesta.example.yaml: every vesta line runs (pipes and
// VAR=value words included) and exits as its comment says (0 unless
// "# exit N"); `cat > FILE <<'EOF'` and `rm FILE` lines write and remove
// files. A `vesta serve` line starts the server until the next one (or
// the end) on free ports unless it names its own, and the default
// addresses 127.0.0.1:7070 and :7080 of the lines after it are pointed
// at those ports: the tests never bind the defaults.
func TestCLIDocCommands(t *testing.T) {
	example := repoFiles(t, "vesta.example.yaml")[0]
	lines := shellLines(t, "docs/cli.md")
	t.Chdir(t.TempDir())
	write(t, "vesta.example.yaml", example)
	var srv *served
	ran := 0
	for _, l := range lines {
		text := l.cmd
		if srv != nil {
			text = strings.NewReplacer("127.0.0.1:7070", srv.central, "127.0.0.1:7080", srv.rest).Replace(text)
		}
		words := shellWords(text)
		args, vesta := isVesta(text)
		switch {
		case len(words) == 4 && words[0] == "cat" && words[1] == ">" && words[3] == "<<EOF":
			write(t, words[2], l.heredoc)
			continue
		case len(words) == 2 && words[0] == "rm":
			if err := os.Remove(filepath.Clean(words[1])); err != nil {
				t.Errorf("docs/cli.md: %q: %v", l.cmd, err)
			}
			continue
		case !vesta:
			t.Errorf("docs/cli.md: %q is not a vesta command, nor a file written with cat or removed with rm: the test cannot run it", l.cmd)
			continue
		case len(args) > 0 && args[0] == "serve":
			if srv != nil {
				srv.stop()
			}
			env, _ := splitEnv(words)
			for _, f := range []string{"--central-listen", "--rest-listen"} {
				if !strings.Contains(text, f) {
					args = append(args, f, "127.0.0.1:0")
				}
			}
			withEnv(env, func() { s := startServe(t, args[1:]...); srv = &s })
		default:
			if r := runPipeline(t, text); r.code != l.code {
				t.Errorf("docs/cli.md: %q: exit %d; want %d:\n%s%s", l.cmd, r.code, l.code, r.stdout, r.stderr)
			}
		}
		ran++
	}
	if ran < 20 {
		t.Fatalf("ran %d docs/cli.md commands; its sh blocks were not found", ran)
	}
}
