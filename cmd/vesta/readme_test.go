package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
)

// The README is tested as a reader uses it: every code block is run or
// checked, in the order it comes. This file holds the reading of its
// blocks and the comparison of outputs, and the fast test of its `vesta`
// lines; readme_run_test.go runs every block against real servers.

// readmePages are the pages whose `vesta` lines TestREADMECommands runs:
// the README, the pages split out of it, and the design's page of the ID,
// whose worked examples are golden vectors of the tests too.
var readmePages = []string{"README.md", "docs/layouts.md", "docs/api.md", "docs/segments.md", "docs/operations.md", "docs/design/id-layouts.md"}

// repoFiles reads files of the repository by their paths from its root.
func repoFiles(t testing.TB, paths ...string) []string {
	t.Helper()
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join("..", "..", p))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// A readmeBlock is one fenced code block.
type readmeBlock struct {
	lang   string // the fence's info string: "sh", "go", "python", "js", "yaml", ...
	text   string
	line   int    // of its opening fence, for messages
	marker string // the text of a `<!-- readme_test: ... -->` comment just above it
	saveAs string // the file the text just above it says to save it as ("save as `FILE`:")
}

var (
	markerRe = regexp.MustCompile(`^<!-- readme_test: (.+) -->$`)
	saveAsRe = regexp.MustCompile("[Ss]ave (?:this |it )?as `([^`]+)`:$")
)

// readmeBlocks returns the fenced blocks of a markdown text.
func readmeBlocks(text string) []readmeBlock {
	var blocks []readmeBlock
	var cur *readmeBlock
	marker, saveAs := "", ""
	n := 0
	for line := range strings.Lines(text) {
		n++
		trimmed := strings.TrimRight(line, "\n")
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &readmeBlock{lang: strings.TrimPrefix(trimmed, "```"), line: n, marker: marker, saveAs: saveAs}
			marker, saveAs = "", ""
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line
		default:
			if m := markerRe.FindStringSubmatch(trimmed); m != nil {
				marker = m[1]
			} else if strings.TrimSpace(trimmed) != "" {
				marker, saveAs = "", ""
				if m := saveAsRe.FindStringSubmatch(trimmed); m != nil {
					saveAs = m[1]
				}
			}
		}
	}
	return blocks
}

// A shStep is one command of an sh block and, in a transcript, the output
// shown under it.
type shStep struct {
	cmd        string
	want       []string
	transcript bool // shown as `$ cmd` with its output
	line       int
	// code is the exit status a command's comment announces ("  # exit
	// 2: ..."); 0 without one.
	code int
	// heredoc is the body of a `cat > FILE <<'EOF'` command, up to its EOF.
	heredoc string
}

var exitComment = regexp.MustCompile(`^exit (\d+)\b`)

// shSteps cuts an sh block into its commands. A block with a `$ ` line is
// a transcript: each `$ ` line is a command, the lines under it its
// output. Any other block is commands alone, one a line, a `  #` comment
// cut off (`# exit N` sets the step's code). A command ending in
// <<'EOF' takes the lines up to EOF as its heredoc.
func shSteps(b readmeBlock) []shStep {
	lines := strings.Split(strings.TrimSuffix(b.text, "\n"), "\n")
	transcript := slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "$ ") })
	var steps []shStep
	for i := 0; i < len(lines); i++ {
		l, at := lines[i], b.line+1+i
		if n := len(steps); n > 0 && strings.HasSuffix(steps[n-1].cmd, "<<'EOF'") && steps[n-1].heredoc == "" {
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != "EOF"; i++ {
				steps[n-1].heredoc += lines[i] + "\n"
			}
			continue
		}
		switch {
		case transcript && strings.HasPrefix(l, "$ "):
			cmd, code := cutComment(strings.TrimPrefix(l, "$ "))
			steps = append(steps, shStep{cmd: cmd, code: code, transcript: true, line: at})
		case transcript && len(steps) > 0:
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
		case transcript:
			steps = append(steps, shStep{cmd: "", want: []string{l}, line: at}) // output before any command: reported
		default:
			if cmd, code := cutComment(l); cmd != "" && !strings.HasPrefix(cmd, "#") {
				steps = append(steps, shStep{cmd: cmd, code: code, line: at})
			}
		}
	}
	return steps
}

// cutComment cuts a command's `  # comment` off, and reads the exit
// status a `# exit N` comment announces.
func cutComment(l string) (cmd string, code int) {
	if j := strings.Index(l, "  #"); j >= 0 {
		if m := exitComment.FindStringSubmatch(strings.TrimSpace(l[j+3:])); m != nil {
			code, _ = strconv.Atoi(m[1])
		}
		l = l[:j]
	}
	return strings.TrimSpace(l), code
}

// What differs from run to run, and from the README's run to this one:
// instants, IDs and other large numbers (times in seconds or
// milliseconds), sequence numbers within a time unit, the build, the
// masks of fresh IDs. Everything else of an output line must be as shown.
var (
	instantRe = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z?`)
	largeRe   = regexp.MustCompile(`\d{7,}`)
	seqRe     = regexp.MustCompile(`("seq":|seq=)\d+`)
	// buildRe: how the server was built (/v1/info's build: its version,
	// revision and toolchain).
	buildRe = regexp.MustCompile(`"build":\{[^}]*\}`)
	// slogRe is what a shown log line must match of a real one: its level
	// and message (the attributes hold instants, addresses and causes).
	slogRe = regexp.MustCompile(`level=\S+ msg=("(?:[^"\\]|\\.)*"|\S+)`)
	// maskRe: a mask with its kind's prefix (a fresh ID's differs each run).
	maskRe = regexp.MustCompile(`\b[a-z][a-z0-9]{0,15}_[0-9a-hjkmnp-tv-z]{13}\b`)
)

func normalize(s string) string {
	s = instantRe.ReplaceAllString(s, "<instant>")
	s = seqRe.ReplaceAllString(s, "${1}<seq>")
	s = buildRe.ReplaceAllString(s, `"build":<build>`)
	s = maskRe.ReplaceAllString(s, "<mask>")
	return largeRe.ReplaceAllString(s, "<n>")
}

// matchOutput compares the output shown under a command with what it
// printed. A command that succeeded must print the shown lines on stdout,
// in order and nothing else; a shown line that is a log record (slog's
// `time=… level=… msg=…`) must be among stderr's, by level and message. A
// command that failed must print each shown line among stderr's.
func matchOutput(want []string, code int, stdout, stderr string) error {
	var wantOut []string
	for _, w := range want {
		if strings.HasPrefix(w, "time=") {
			m := slogRe.FindString(w)
			if m == "" || !strings.Contains(stderr, m) {
				return fmt.Errorf("the log line %q (its %q) is not in stderr:\n%s", w, m, stderr)
			}
			continue
		}
		wantOut = append(wantOut, normalize(w))
	}
	if code != 0 {
		errLines := strings.Split(normalize(stderr), "\n")
		for _, w := range wantOut {
			if !slices.Contains(errLines, w) {
				return fmt.Errorf("exit %d; stderr lacks the shown line %q:\n%s", code, w, stderr)
			}
		}
		if len(wantOut) == 0 {
			return fmt.Errorf("exit %d: %s", code, stderr)
		}
		return nil
	}
	got := strings.Split(normalize(strings.TrimRight(stdout, "\n")), "\n")
	if len(wantOut) == 0 {
		return nil // a transcript showing no output checks only the exit code
	}
	if !slices.Equal(got, wantOut) {
		return fmt.Errorf("printed:\n%s\nwant (as normalized):\n%s", strings.Join(got, "\n"), strings.Join(wantOut, "\n"))
	}
	return nil
}

var (
	// idRe is an ID of any layout made in this century: 15 to 20 digits
	// (instants, even in milliseconds, have 13).
	idRe         = regexp.MustCompile(`\b\d{15,20}\b`)
	layoutFlagRe = regexp.MustCompile(`--layout[ =](\w+)`)
)

// sameIssuers compares the IDs a transcript shows with those the command
// printed, in order. matchOutput lets IDs differ; here each pair, decoded
// in the layout the command names (else the default, make run's too),
// must agree on everything but the time and the sequence: a shown ID then
// claims the machine ID and publish method the command really issues with.
func sameIssuers(cmd string, want []string, stdout string) error {
	layout := core.Sorted
	if m := layoutFlagRe.FindStringSubmatch(cmd); m != nil {
		l, err := core.ParseLayout(m[1])
		if err != nil {
			return err
		}
		layout = l
	}
	codec, err := core.NewCodec(layout, time.Time{})
	if err != nil {
		return err
	}
	shown, got := idRe.FindAllString(strings.Join(want, "\n"), -1), idRe.FindAllString(stdout, -1)
	if len(shown) != len(got) {
		return fmt.Errorf("shows %d IDs, printed %d", len(shown), len(got))
	}
	explain := func(s string) (core.Explanation, error) {
		id, err := core.ParseID(s)
		return codec.Explain(id), err
	}
	for i := range shown {
		a, errA := explain(shown[i])
		b, errB := explain(got[i])
		if err := errors.Join(errA, errB); err != nil {
			return err
		}
		if a.Version != b.Version || a.Type != b.Type || a.Method != b.Method || a.Machine != b.Machine {
			return fmt.Errorf("the ID shown, %s, is %s in the %s layout; the one printed, %s, is %s",
				shown[i], issuer(a), layout, got[i], issuer(b))
		}
	}
	return nil
}

// issuer says who issued an ID, as far as its bits tell.
func issuer(e core.Explanation) string {
	return fmt.Sprintf("version=%d type=%s method=%s machine=%d", e.Version, e.Type, e.Method, e.Machine)
}

// The README's shell lines work as written: every `vesta` command of its
// sh blocks (and those of the pages split out of it) that issues, builds
// or explains IDs runs in-process, pipes included, exits 0 and prints what
// its transcript shows; every `vesta serve` line chooses a machine ID or a
// config; and `make run` passes one. Lines that name remote servers,
// serve, or need a segment store are TestREADMEQuickStarts' (against real
// servers); this is the inner loop's share.
func TestREADMECommands(t *testing.T) {
	if !strings.Contains(repoFiles(t, "Makefile")[0], "vesta serve --machine ") {
		t.Error("make run does not pass --machine: there is no default machine ID")
	}
	pages := repoFiles(t, readmePages...)
	t.Chdir(t.TempDir())
	ran := 0
	for i, page := range pages {
		for _, b := range readmeBlocks(page) {
			if b.lang != "sh" {
				continue
			}
			for _, st := range shSteps(b) {
				where := fmt.Sprintf("%s:%d", readmePages[i], st.line)
				if st.cmd == "" {
					t.Errorf("%s: output %q under no command", where, st.want)
					continue
				}
				if args, ok := isVesta(st.cmd); ok && len(args) > 0 && args[0] == "serve" {
					if !strings.Contains(st.cmd, "--machine") && !strings.Contains(st.cmd, "--config") {
						t.Errorf("%s: %q chooses no machine ID; serve refuses that", where, st.cmd)
					}
					continue
				}
				if !strings.HasPrefix(st.cmd, "vesta ") || strings.Contains(st.cmd, "--servers") ||
					strings.HasPrefix(st.cmd, "vesta seq") || strings.ContainsAny(st.cmd, `"'`) {
					continue
				}
				stdin := ""
				var r result
				for stage := range strings.SplitSeq(st.cmd, " | ") {
					args := strings.Fields(strings.TrimPrefix(strings.TrimSpace(stage), "vesta "))
					if r = cli(t, stdin, args...); r.code != 0 {
						break
					}
					stdin = r.stdout
				}
				if err := matchOutput(st.want, r.code, r.stdout, r.stderr); err != nil {
					t.Errorf("%s: %q: %v", where, st.cmd, err)
				} else if err := sameIssuers(st.cmd, st.want, r.stdout); r.code == 0 && err != nil {
					t.Errorf("%s: %q: %v", where, st.cmd, err)
				}
				ran++
			}
		}
	}
	if ran < 4 {
		t.Fatalf("ran %d README commands; the README's sh blocks were not found", ran)
	}
}

// The IDs shown are compared by who issued them.
func TestREADMESameIssuers(t *testing.T) {
	for _, tc := range []struct {
		name, cmd string
		want      []string
		stdout    string
		ok        bool
	}{
		{"another server", "curl x", []string{"259675731686064502"}, "259676290030764236\n", false},            // rest 1023, rest 1022
		{"same machine and method", "curl x", []string{"259005214277304545"}, "259675731686064502\n", true},    // rest 1023 both
		{"another machine", "curl x", []string{"259005213749870817"}, "259005214277304545\n", false},           // rest 520, rest 1023
		{"another method", "x", []string{`{"id":"259675730612322679"}`}, `{"id":"259675731686064502"}`, false}, // central, rest
		{"in the layout named", "vesta make --layout leaf", []string{"1741610183685066851"}, "1741610183685066851\n", true},
		{"a leaf worker", "vesta make --layout leaf", []string{"1741610183685066851"}, "1741610183685070947\n", false}, // worker 5, 6
		{"an ID missing", "x", []string{"259005214277304545 259005214277304546"}, "259005214277304545\n", false},
		{"instants are no IDs", "x", []string{"1796112171536"}, "1796112171999\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := sameIssuers(tc.cmd, tc.want, tc.stdout); (err == nil) != tc.ok {
				t.Fatalf("sameIssuers: %v; want ok=%v", err, tc.ok)
			}
		})
	}
}

var (
	benchFigureRe = regexp.MustCompile(`×[\d,.]*\d|\d[\d,.]*\d|\d`)
	benchGoalRe   = regexp.MustCompile(`\(goal [^)]*\)`)
)

// The README's benchmark figures are BENCHMARKS.md's: every ratio (×N)
// of its table's last column is written there as it is, every other
// figure there as a number, so a row cannot outlive a new measurement
// unnoticed. Goals, in parentheses, are not figures.
func TestREADMEBenchmarks(t *testing.T) {
	files := repoFiles(t, "README.md", "BENCHMARKS.md")
	readme, bench := files[0], []byte(files[1])
	_, section, _ := strings.Cut(readme, "\n## Benchmarks\n")
	section, _, _ = strings.Cut(section, "\n## ")
	rows := 0
	for line := range strings.Lines(section) {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 3 || strings.HasPrefix(cells[0], "---") || strings.TrimSpace(cells[0]) == "what" {
			continue
		}
		rows++
		for _, f := range benchFigureRe.FindAllString(benchGoalRe.ReplaceAllString(cells[2], ""), -1) {
			found := strings.Contains(string(bench), f)
			if !strings.HasPrefix(f, "×") {
				found = regexp.MustCompile(`(^|[^\d.,])` + regexp.QuoteMeta(f) + `($|[^\d.,])`).Match(bench)
			}
			if !found {
				t.Errorf("README's benchmark row %q: %s is nowhere in BENCHMARKS.md", strings.TrimSpace(cells[0]), f)
			}
		}
	}
	if rows < 10 {
		t.Fatalf("read %d rows of README's benchmark table", rows)
	}
}

// The design pages' ratios are BENCHMARKS.md's: every ×N written on a
// topic page of docs/design (the dated history apart) is written there as
// it is, so that a page cannot keep a ratio a new measurement replaced.
func TestDesignBenchmarks(t *testing.T) {
	bench := repoFiles(t, "BENCHMARKS.md")[0]
	pages, err := filepath.Glob("../../docs/design/*.md")
	if err != nil || len(pages) < 10 {
		t.Fatalf("docs/design: %d pages, %v", len(pages), err)
	}
	ratios := 0
	for _, p := range pages {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range designRatioRe.FindAllString(string(text), -1) {
			ratios++
			if !regexp.MustCompile(regexp.QuoteMeta(f) + `($|[^\d.,])`).MatchString(bench) {
				t.Errorf("%s: %s is nowhere in BENCHMARKS.md", p, f)
			}
		}
	}
	if ratios < 5 {
		t.Fatalf("read %d ratios on the design pages", ratios)
	}
}

var designRatioRe = regexp.MustCompile(`×\d(?:[\d,.]*\d)?`)

// The comparison itself: what varies is ignored, nothing else.
func TestREADMEMatchOutput(t *testing.T) {
	for _, tc := range []struct {
		name           string
		want           []string
		code           int
		stdout, stderr string
		ok             bool
	}{
		{"another ID", []string{"259675384875844560"}, 0, "259675389170810880\n", "", true},
		{"another instant and seq", []string{`{"seq":0,"machine":7,"timestamp":"2026-12-01T18:33:08Z"}`}, 0, `{"seq":222,"machine":7,"timestamp":"2027-01-01T00:00:00Z"}`, "", true},
		{"another machine", []string{`{"machine":7}`}, 0, `{"machine":8}`, "", false},
		{"a small number", []string{"1004 [1005 1006 1007]"}, 0, "1004 [1005 1006 1008]\n", "", false},
		{"a line more", []string{"1"}, 0, "1\n2\n", "", false},
		{"failed, shown error", []string{"vesta: conf: bad"}, 2, "", "vesta: conf: bad\nRun 'vesta help' for usage.\n", true},
		{"failed, not shown", []string{"1"}, 1, "1\n", "vesta: no\n", false},
		{"failed, nothing shown", nil, 1, "", "vesta: no\n", false},
		{"log line", []string{`time=2026-12-01T18:34:48.721Z level=WARN msg="client: fallback: IDs come from the embedded generator (method embedded)" machine=7`, "1 embedded 7"}, 0, "1 embedded 7\n",
			`time=2027-01-01T00:00:00.000Z level=WARN msg="client: fallback: IDs come from the embedded generator (method embedded)" machine=7 cause="x"` + "\n", true},
		{"log line missing", []string{`time=2026-12-01T18:34:48.721Z level=WARN msg="client: fallback: IDs come from the embedded generator (method embedded)"`}, 0, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := matchOutput(tc.want, tc.code, tc.stdout, tc.stderr); (err == nil) != tc.ok {
				t.Fatalf("matchOutput: %v; want ok=%v", err, tc.ok)
			}
		})
	}
}
