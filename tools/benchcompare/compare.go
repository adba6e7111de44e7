package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// tree is one side of the comparison: a source tree and what was built
// from it.
type tree struct {
	key   string // "today" or "rev", in the results' keys
	label string // "today", or the revision as given
	dir   string
	bin   string // directory of its binaries: vesta, vesta-bench, peers.test
	notes []string
}

func (t *tree) path(name string) string { return filepath.Join(t.bin, name) }

// results holds every measurement: per key, one value per round.
type results map[string][]float64

func (r results) add(key string, v float64) { r[key] = append(r[key], v) }

func compare(ctx context.Context, o options, args []string, stdout, stderr io.Writer) error {
	root, err := output(ctx, "", "git", "rev-parse", "--show-toplevel")
	if err != nil {
		return fmt.Errorf("not in the repository's work tree: %w", err)
	}
	if o.rev == "" {
		o.rev = "main~1"
		if tag, err := output(ctx, root, "git", "describe", "--tags", "--abbrev=0", "HEAD"); err == nil && tag != "" {
			o.rev = tag
		}
	}
	sha, err := output(ctx, root, "git", "rev-parse", "--verify", "--quiet", o.rev+"^{commit}")
	if err != nil || sha == "" {
		return fmt.Errorf("-rev %q: no such revision in this repository", o.rev)
	}
	tmp, err := os.MkdirTemp("", "bench-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "bench-compare: "+format+"\n", a...) }

	today := &tree{key: "today", label: "today", dir: root, bin: filepath.Join(tmp, "today")}
	old := &tree{key: "rev", label: o.rev, dir: filepath.Join(tmp, "rev"), bin: filepath.Join(tmp, "rev-bin")}
	logf("checking out %s (%s) into %s", o.rev, sha[:12], old.dir)
	if _, err := output(ctx, root, "git", "worktree", "add", "--detach", "--force", old.dir, sha); err != nil {
		return fmt.Errorf("git worktree add %s: %w", o.rev, err)
	}
	defer func() {
		// A fresh context: the run's may have ended (an interrupt).
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		output(c, root, "git", "worktree", "remove", "--force", old.dir)
	}()
	for _, t := range []*tree{today, old} {
		logf("building %s (%s)", t.label, t.dir)
		if err := build(ctx, t, root, o.only); err != nil {
			return err
		}
	}

	load0 := loadAvg()
	start := time.Now()
	res := results{}
	if slices.Contains(o.only, "embedded") {
		if err := runEmbedded(ctx, o, today, old, res, logf); err != nil {
			return err
		}
	}
	if slices.Contains(o.only, "central") || slices.Contains(o.only, "rest") {
		if err := runServers(ctx, o, today, old, res, tmp, logf); err != nil {
			return err
		}
	}
	load1 := loadAvg()

	fmt.Fprintf(stdout, "## bench-compare: today's tree against %s (%s)\n\n", o.rev, sha[:12])
	fmt.Fprintf(stdout, "`make bench-compare ARGS='%s'`: %d round(s) of %v per measurement, interleaved (odd rounds in one order, even rounds in the other); measured %s to %s UTC (%v); load average %s at the start, %s at the end; %d CPUs, %s. ",
		strings.Join(args, " "), o.rounds, o.duration, start.UTC().Format("2006-01-02 15:04:05"), time.Now().UTC().Format("15:04:05"),
		time.Since(start).Round(time.Second), load0, load1, runtime.NumCPU(), goVersion(ctx))
	fmt.Fprintf(stdout, "Each figure is min–max over the rounds; each ratio is taken within a round, then min–max.\n")
	for _, t := range []*tree{today, old} {
		for _, n := range t.notes {
			fmt.Fprintf(stdout, "\n%s: %s", t.label, n)
		}
	}
	fmt.Fprintln(stdout)
	printTables(stdout, o, res)
	return nil
}

// build builds t's server, load generator and peer benchmarks into t.bin.
// The load generator and the benchmarks are today's sources (root's)
// built against t's packages; when they do not build there, t's own.
func build(ctx context.Context, t *tree, root string, only []string) error {
	if err := os.MkdirAll(t.bin, 0o755); err != nil {
		return err
	}
	var env []string
	if t.dir != root {
		env = []string{"GOFLAGS=-mod=mod"} // an older tree's go.sum may lack what today's tools need
	}
	if slices.Contains(only, "central") || slices.Contains(only, "rest") {
		if _, err := outputEnv(ctx, t.dir, env, "go", "build", "-o", t.path("vesta"), "./cmd/vesta"); err != nil {
			return fmt.Errorf("%s: building cmd/vesta: %w", t.label, err)
		}
		if err := buildTool(ctx, t, root, env, "vesta-bench", "go", "build", "-o", t.path("vesta-bench"), "."); err != nil {
			return err
		}
	}
	if slices.Contains(only, "embedded") {
		if err := buildTool(ctx, t, root, env, "peerbench", "go", "test", "-c", "-o", t.path("peers.test"), "."); err != nil {
			return err
		}
	}
	return nil
}

// buildTool builds tools/name in t with today's sources, or t's own.
func buildTool(ctx context.Context, t *tree, root string, env []string, name string, cmd ...string) error {
	dir := filepath.Join(t.dir, "tools", name)
	if t.dir != root {
		if err := overlay(filepath.Join(root, "tools", name), dir); err != nil {
			return err
		}
	}
	_, err := outputEnv(ctx, dir, env, cmd[0], cmd[1:]...)
	if err == nil || t.dir == root {
		if err != nil {
			return fmt.Errorf("%s: building tools/%s: %w", t.label, name, err)
		}
		return nil
	}
	// Today's sources need what the revision lacks: its own, then.
	if _, rerr := output(ctx, t.dir, "git", "checkout", "--", "tools/"+name); rerr != nil {
		return fmt.Errorf("%s: building today's tools/%s: %w; restoring its own: %w", t.label, name, err, rerr)
	}
	output(ctx, t.dir, "git", "clean", "-fdq", "--", "tools/"+name)
	if _, err2 := outputEnv(ctx, dir, env, cmd[0], cmd[1:]...); err2 != nil {
		return fmt.Errorf("%s: building tools/%s: today's: %w; its own: %w", t.label, name, err, err2)
	}
	t.notes = append(t.notes, fmt.Sprintf("today's tools/%s does not build against it; its own was used", name))
	return nil
}

// overlay replaces the Go sources and module files of dst with src's.
func overlay(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dst, "*.go"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	files, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, f := range files {
		n := f.Name()
		if f.IsDir() || !(strings.HasSuffix(n, ".go") || n == "go.mod" || n == "go.sum") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, n), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// order is the round's order of items: as given in odd rounds (from 1),
// reversed in even ones.
func order[T any](round int, items []T) []T {
	out := slices.Clone(items)
	if round%2 == 1 {
		slices.Reverse(out)
	}
	return out
}

// benchLine is one result line of go test -bench.
var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op(?:\s+([0-9.]+) ns/id)?`)

// runEmbedded runs the peer benchmarks of both trees, interleaved.
func runEmbedded(ctx context.Context, o options, today, old *tree, res results, logf func(string, ...any)) error {
	benchtime := o.duration
	if o.smoke {
		benchtime = min(o.duration, 100*time.Millisecond)
	}
	// A pattern's levels must each name a benchmark's whole depth (a
	// partial match runs a leaf without reporting it): the revision's
	// vesta rows take two runs.
	sides := []struct {
		t        *tree
		patterns []string
	}{
		{today, []string{`^Benchmark(Cost|Batch)$`}},
		{old, []string{`^BenchmarkCost$/^(serial|parallel)$/^vesta$`, `^BenchmarkBatch$/^vesta(-append)?$`}},
	}
	for r := range o.rounds {
		for _, s := range order(r, sides) {
			logf("round %d: peer benchmarks of %s", r+1, s.t.label)
			var out string
			for _, pattern := range s.patterns {
				b, err := output(ctx, filepath.Dir(s.t.path("peers.test")), s.t.path("peers.test"),
					"-test.run", "^$", "-test.bench", pattern, "-test.benchtime", benchtime.String(), "-test.count", "1")
				if err != nil {
					return fmt.Errorf("%s: peer benchmarks: %w", s.t.label, err)
				}
				out += b + "\n"
			}
			found := 0
			for line := range strings.SplitSeq(out, "\n") {
				m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
				if m == nil {
					continue
				}
				v, _ := strconv.ParseFloat(m[2], 64)
				if m[3] != "" {
					v, _ = strconv.ParseFloat(m[3], 64)
				}
				res.add("emb/"+m[1]+"/"+s.t.key, v)
				found++
			}
			if found == 0 {
				return fmt.Errorf("%s: no benchmark results in:\n%s", s.t.label, out)
			}
		}
	}
	return nil
}

// server is a process this command started.
type server struct {
	name string
	cmd  *exec.Cmd
	log  string
}

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// start starts a process in the background, its output to a file of dir.
func start(ctx context.Context, dir, name string, prog string, args ...string) (*server, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(prog, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, f, f
	// A day of borrowing, as the Go benchmarks have: what is measured is
	// the cost of a call, not the sequence's ceiling (1,048,576 IDs/s),
	// which 100 IDs a request reach at about 10k requests/s.
	cmd.Env = append(os.Environ(), "VESTA_ID_MAX_BORROW=24h")
	err = cmd.Start()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return &server{name: name, cmd: cmd, log: logPath}, nil
}

// waitListening waits until addr accepts connections, or says why not.
func waitListening(ctx context.Context, s *server, addr string) error {
	exited := make(chan struct{})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		if s.cmd.ProcessState != nil {
			close(exited)
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	b, _ := os.ReadFile(s.log)
	return fmt.Errorf("%s: nothing listens at %s; its output:\n%s", s.name, addr, tail(b))
}

// freeAddr is a loopback address that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// runServers starts each tree's vesta serve (and Redis, and the trivial
// handler), then runs the central and REST groups.
func runServers(ctx context.Context, o options, today, old *tree, res results, tmp string, logf func(string, ...any)) error {
	var started []*server
	defer func() {
		for _, s := range slices.Backward(started) {
			s.stop()
		}
	}()
	// launch starts prog and waits until it listens on every one of addrs.
	launch := func(dir, name string, addrs []string, prog string, args ...string) error {
		s, err := start(ctx, dir, name, prog, args...)
		if err != nil {
			return err
		}
		started = append(started, s)
		for _, a := range addrs {
			if err := waitListening(ctx, s, a); err != nil {
				return err
			}
		}
		return nil
	}
	type addrs struct{ central, rest string }
	at := map[*tree]addrs{}
	for i, t := range []*tree{today, old} {
		c, err := freeAddr()
		if err != nil {
			return err
		}
		r, err := freeAddr()
		if err != nil {
			return err
		}
		data := filepath.Join(tmp, fmt.Sprintf("data-%d", i))
		if err := launch(tmp, "vesta-"+strconv.Itoa(i), []string{c, r}, t.path("vesta"), "serve", "--machine", strconv.Itoa(1023-i),
			"--central-listen", c, "--rest-listen", r, "--data-dir", data, "--log-level", "warn"); err != nil {
			return err
		}
		at[t] = addrs{c, r}
	}
	if slices.Contains(o.only, "central") {
		redisAddr, err := freeAddr()
		if err != nil {
			return err
		}
		_, port, _ := net.SplitHostPort(redisAddr)
		rdir := filepath.Join(tmp, "redis")
		if err := os.MkdirAll(rdir, 0o700); err != nil {
			return err
		}
		if err := launch(rdir, "redis", []string{redisAddr}, "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", rdir); err != nil {
			return err
		}
		if err := runCentral(ctx, o, today, old, at[today].central, at[old].central, redisAddr, res, logf); err != nil {
			return err
		}
	}
	if slices.Contains(o.only, "rest") {
		base, err := freeAddr()
		if err != nil {
			return err
		}
		if err := launch(tmp, "baseline", []string{base}, today.path("vesta-bench"), "http-baseline", "--listen", base); err != nil {
			return err
		}
		if err := runREST(ctx, o, today, old, at[today].rest, at[old].rest, base, res, logf); err != nil {
			return err
		}
	}
	return nil
}

// loadResult is what vesta-bench --json reports and these tables use.
type loadResult struct {
	CallsPerSec float64 `json:"calls_per_sec"`
	P99us       float64 `json:"p99_us"`
	Errors      uint64  `json:"errors"`
}

// runCentral drives each tree's client and server, and Redis through
// rueidis and go-redis, at o.callers callers and at 1.
func runCentral(ctx context.Context, o options, today, old *tree, todayAddr, oldAddr, redisAddr string, res results, logf func(string, ...any)) error {
	warmup := min(o.duration/3, time.Second)
	type target struct {
		key   string
		bench string // the vesta-bench binary
		args  []string
	}
	for _, c := range []int{o.callers, 1} {
		cs := strconv.Itoa(c)
		targets := []target{
			{"today", today.path("vesta-bench"), []string{"client", "--addr", todayAddr}},
			{"rev", old.path("vesta-bench"), []string{"client", "--addr", oldAddr}},
			{"rueidis", today.path("vesta-bench"), []string{"redis-rueidis", "--addr", redisAddr}},
			{"go-redis", today.path("vesta-bench"), []string{"redis-incr", "--addr", redisAddr, "--pool"}},
		}
		for r := range o.rounds {
			for _, tg := range order(r, targets) {
				logf("round %d: central, %d callers: %s", r+1, c, tg.key)
				args := append(slices.Clone(tg.args), "-c", cs, "-d", o.duration.String(), "--warmup", warmup.String(), "--json")
				out, err := output(ctx, "", tg.bench, args...)
				if err != nil {
					return fmt.Errorf("central, %s: %w", tg.key, err)
				}
				var lr loadResult
				if err := json.Unmarshal([]byte(out), &lr); err != nil {
					return fmt.Errorf("central, %s: %w: %s", tg.key, err, out)
				}
				if lr.Errors > 0 {
					return fmt.Errorf("central, %s: %d calls failed: %s", tg.key, lr.Errors, out)
				}
				res.add("central/"+cs+"/calls/"+tg.key, lr.CallsPerSec)
				res.add("central/"+cs+"/p99/"+tg.key, lr.P99us)
			}
		}
	}
	return nil
}

// restRoutes are the REST paths measured.
var restRoutes = []string{"/genid", "/v1/id", "/v1/ids?count=100"}

// wrkRate reads wrk's Requests/sec, refusing answers other than 2xx.
var wrkRate = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// runREST drives each tree's REST server and the trivial handler with wrk.
func runREST(ctx context.Context, o options, today, old *tree, todayAddr, oldAddr, baseAddr string, res results, logf func(string, ...any)) error {
	type target struct{ key, addr string }
	targets := []target{{"today", todayAddr}, {"rev", oldAddr}, {"baseline", baseAddr}}
	secs := max(1, int((o.duration+time.Second/2)/time.Second)) // wrk takes whole seconds
	routes := restRoutes
	if o.smoke {
		routes = routes[:1] // a second a run: the smoke measures /genid only, unwarmed
	} else {
		for _, tg := range targets { // warm up: connections, pools, the CPUs' caches
			if _, err := output(ctx, "", "wrk", "-t2", "-c32", "-d1s", "http://"+tg.addr+"/genid"); err != nil {
				return fmt.Errorf("rest: wrk: %w", err)
			}
		}
	}
	for r := range o.rounds {
		for _, route := range routes {
			for _, tg := range order(r, targets) {
				logf("round %d: rest %s: %s", r+1, route, tg.key)
				out, err := output(ctx, "", "wrk", "-t2", "-c32", "-d"+strconv.Itoa(secs)+"s", "http://"+tg.addr+route)
				if err != nil {
					return fmt.Errorf("rest %s, %s: wrk: %w", route, tg.key, err)
				}
				if strings.Contains(out, "Non-2xx") || strings.Contains(out, "Socket errors") {
					return fmt.Errorf("rest %s, %s: failed requests:\n%s", route, tg.key, out)
				}
				m := wrkRate.FindStringSubmatch(out)
				if m == nil {
					return fmt.Errorf("rest %s, %s: no Requests/sec in wrk's output:\n%s", route, tg.key, out)
				}
				v, _ := strconv.ParseFloat(m[1], 64)
				res.add("rest/"+route+"/"+tg.key, v)
			}
		}
	}
	return nil
}

// output runs a command in dir and returns its standard output, trimmed;
// a failure carries the end of its standard error.
func output(ctx context.Context, dir, prog string, args ...string) (string, error) {
	return outputEnv(ctx, dir, nil, prog, args...)
}

func outputEnv(ctx context.Context, dir string, env []string, prog string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s", prog, strings.Join(args, " "), err, tail(errb.Bytes()))
	}
	return strings.TrimSpace(out.String()), nil
}

// tail is the last lines of b.
func tail(b []byte) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// loadAvg is the 1-, 5- and 15-minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " / ")
}

func goVersion(ctx context.Context) string {
	v, err := output(ctx, "", "go", "env", "GOVERSION")
	if err != nil {
		return runtime.Version()
	}
	return v
}
