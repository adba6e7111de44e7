package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The shell lines of a markdown page run as written: reading its ```sh
// blocks and running a line of vesta commands in-process (docs/cli.md's
// test uses it).

// shellLines reads the commands of the ```sh blocks of path (from the
// repository's root), with readmeBlocks and shSteps as the README's tests
// do: in a transcript only its `$ ` lines, elsewhere every line; `  #`
// comments cut off.
func shellLines(tb testing.TB, path string) []shStep {
	tb.Helper()
	var out []shStep
	for _, blk := range readmeBlocks(repoFiles(tb, path)[0]) {
		if blk.lang != "sh" {
			continue
		}
		for _, st := range shSteps(blk) {
			if st.cmd != "" {
				out = append(out, st)
			}
		}
	}
	return out
}

// shellWords splits a command line as sh does for the forms the
// documents use: blanks separate words; '...' and "..." quote (no
// escapes, no expansion); a pair of quotes alone is an empty word.
func shellWords(s string) []string {
	var out []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, w.String())
	}
	return out
}

var envAssign = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// splitEnv takes the VAR=value words that start a command off it.
func splitEnv(words []string) (env, rest []string) {
	for len(words) > 0 && envAssign.MatchString(words[0]) {
		env, words = append(env, words[0]), words[1:]
	}
	return env, words
}

// withEnv sets the VAR=value entries of env for the time of f, as sh
// does for a command's own assignments.
func withEnv(env []string, f func()) {
	type saved struct {
		k, v string
		had  bool
	}
	var undo []saved
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		old, had := os.LookupEnv(k)
		undo = append(undo, saved{k, old, had})
		os.Setenv(k, v)
	}
	defer func() {
		for i := len(undo) - 1; i >= 0; i-- {
			if u := undo[i]; u.had {
				os.Setenv(u.k, u.v)
			} else {
				os.Unsetenv(u.k)
			}
		}
	}()
	f()
}

// isVesta reports a line whose first command (after VAR=value words) is
// vesta, and returns its arguments.
func isVesta(line string) ([]string, bool) {
	_, words := splitEnv(shellWords(line))
	if len(words) == 0 || words[0] != "vesta" {
		return nil, false
	}
	return words[1:], true
}

// runPipeline runs a line of vesta commands joined by " | " in-process,
// each stage's stdout the next one's stdin, and each with its own VAR=value
// words. It returns the result of the first stage that exits non-zero,
// else the last's.
func runPipeline(tb testing.TB, line string) result {
	tb.Helper()
	var r result
	for stage := range strings.SplitSeq(line, " | ") {
		env, words := splitEnv(shellWords(stage))
		if len(words) == 0 || words[0] != "vesta" {
			tb.Fatalf("%q: stage %q is not a vesta command", line, stage)
		}
		withEnv(env, func() { r = cli(tb, r.stdout, words[1:]...) })
		if r.code != 0 {
			return r
		}
	}
	return r
}
