// Command vesta-nemesis tries to make vesta issue one ID or one sequence
// number twice: a fleet of real processes (vesta serve, etcd or Redis
// under Sentinel, MariaDB, Redis) in network namespaces, a workload
// recording every value it receives in a ledger, and faults from a
// seeded schedule. It exits 0 only when no value repeated (with
// --sabotage, only when one did).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vesta-go/vesta/nemesis/ledger"
	"github.com/vesta-go/vesta/nemesis/report"
)

type options struct {
	seed      int64
	duration  time.Duration
	providers []string
	rate      int
	interval  time.Duration
	out       string
	ledger    string
	keep      bool
	sabotage  bool
	repo      string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("vesta-nemesis", flag.ContinueOnError)
	fs.Int64Var(&o.seed, "seed", 0, "seed of every random choice (default: from the time)")
	fs.DurationVar(&o.duration, "duration", 90*time.Second, "workload time per provider")
	providers := fs.String("providers", "etcd,sentinel", "machine-ID providers to run, in order: etcd, sentinel")
	fs.IntVar(&o.rate, "rate", 20000, "IDs per second, all callers together")
	fs.DurationVar(&o.interval, "interval", 4*time.Second, "longest gap between two faults")
	fs.StringVar(&o.out, "out", "", "directory for report.md and picture.svg (default: a temporary one)")
	fs.StringVar(&o.ledger, "ledger", "", "directory for the ledgers (default: under the temporary directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directories (logs, data)")
	fs.BoolVar(&o.sabotage, "sabotage", false, "run an unsafe fleet (two servers on one fixed machine ID) that must show repeats")
	fs.StringVar(&o.repo, "repo", "", "the vesta repository (default: found from the working directory)")
	ci := fs.Bool("ci", false, "the short run for CI: --seed 1 --duration 30s --interval 3s, both providers, every fault kind (flags given too win)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if *ci {
		if o.sabotage {
			return o, errors.New("--ci and --sabotage: run them one after the other")
		}
		if !set["seed"] {
			o.seed, set["seed"] = 1, true
		}
		if !set["duration"] {
			o.duration = 30 * time.Second
		}
		if !set["interval"] {
			o.interval = 3 * time.Second
		}
	}
	if !set["seed"] {
		o.seed = time.Now().UnixNano() % 1_000_000_000
	}
	if o.duration < 10*time.Second || o.duration > 24*time.Hour {
		return o, fmt.Errorf("--duration %v: want 10s to 24h", o.duration)
	}
	if o.rate < 100 || o.rate > 1_000_000 {
		return o, fmt.Errorf("--rate %d: want 100 to 1000000 IDs/s", o.rate)
	}
	if o.interval < time.Second || o.interval > o.duration {
		return o, fmt.Errorf("--interval %v: want 1s to --duration (%v)", o.interval, o.duration)
	}
	for _, p := range strings.Split(*providers, ",") {
		p = strings.TrimSpace(p)
		if p != "etcd" && p != "sentinel" {
			return o, fmt.Errorf("--providers: %q; want etcd and/or sentinel, comma-separated", p)
		}
		if slices.Contains(o.providers, p) {
			return o, fmt.Errorf("--providers: %q listed twice", p)
		}
		o.providers = append(o.providers, p)
	}
	if o.repo == "" {
		var err error
		if o.repo, err = findRepo(); err != nil {
			return o, fmt.Errorf("--repo: %v", err)
		}
	}
	return o, nil
}

// findRepo walks up from the working directory to the main module.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/vesta-go/vesta\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no github.com/vesta-go/vesta module above the working directory")
		}
		dir = parent
	}
}

func main() {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if len(os.Args) > 1 && os.Args[1] == "client" {
		os.Exit(childMain(os.Args[2:]))
	}
	log.SetPrefix("nemesis: ")
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "vesta-nemesis:", err)
		os.Exit(2)
	}
	os.Exit(run(o))
}

// summary is the run's last line.
type summary struct {
	ids, numbers, faults, repeats int64
}

func run(o options) int {
	fmt.Printf("nemesis: seed %d\n", o.seed)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tmp, err := os.MkdirTemp("", "vesta-nemesis-")
	if err != nil {
		log.Print(err)
		return 2
	}
	keep := o.keep
	defer func() {
		if keep {
			log.Printf("kept %s (server logs NNN/serve.log, store data)", tmp)
		} else {
			os.RemoveAll(tmp)
		}
	}()
	if o.out == "" {
		// Apart from the run's temporary directory: the report outlives it.
		if o.out, err = os.MkdirTemp("", "vesta-nemesis-report-"); err != nil {
			log.Print(err)
			return 2
		}
	}
	if o.ledger == "" {
		o.ledger = filepath.Join(tmp, "ledger")
	}
	bin := filepath.Join(tmp, "vesta")
	log.Printf("building vesta (-tags nemesis) from %s", o.repo)
	if err := buildVesta(o.repo, bin); err != nil {
		log.Printf("building vesta: %v", err)
		return 2
	}
	names := o.providers
	if o.sabotage {
		names = []string{"sabotage"}
	}
	var runs []report.Run
	var sum summary
	failed := false
	for i, p := range names {
		if ctx.Err() != nil {
			break
		}
		// One stream of choices per provider run, from the seed.
		rng := rand.New(rand.NewPCG(uint64(o.seed), uint64(i+1)))
		r, ok := runProvider(ctx, o, p, bin, filepath.Join(tmp, p), rng)
		runs = append(runs, r)
		sum.ids += r.IDs
		sum.numbers += r.Numbers
		sum.faults += int64(len(r.Faults))
		sum.repeats += r.Repeated
		failed = failed || !ok
		// The evidence of a repeat in a safe fleet is kept.
		keep = keep || (r.Repeated > 0 && p != "sabotage")
	}
	if err := writeReport(o.out, runs); err != nil {
		log.Printf("report: %v", err)
		failed = true
	} else {
		log.Printf("report: %s", filepath.Join(o.out, "report.md"))
	}
	code := 0
	switch {
	case ctx.Err() != nil:
		log.Print("interrupted")
		code = 3
	case o.sabotage && sum.repeats == 0:
		log.Print("sabotage: the unsafe fleet showed no repeat: the checker cannot fail")
		code = 1
	case o.sabotage:
		log.Printf("sabotage: the unsafe fleet showed %d repeats, as it must", sum.repeats)
	case sum.repeats > 0 || failed:
		code = 1
	}
	fmt.Printf("nemesis: seed %d, %d IDs, %d numbers, %d faults, %d repeats\n", o.seed, sum.ids, sum.numbers, sum.faults, sum.repeats)
	return code
}

func writeReport(dir string, runs []report.Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	md, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return err
	}
	defer md.Close()
	if err := report.Markdown(md, runs...); err != nil {
		return err
	}
	for i, r := range runs {
		name := "picture.svg"
		if i > 0 {
			name = fmt.Sprintf("picture-%s.svg", r.Name)
		}
		sv, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = report.SVG(sv, r)
		sv.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// runProvider runs one fleet; ok is false when it found repeats or
// something else went wrong (setup, a fault that never recovered, IDs of
// the wrong machine).
func runProvider(ctx context.Context, o options, provider, bin, dir string, rng *rand.Rand) (r report.Run, ok bool) {
	r = report.Run{Name: provider, Seed: o.seed, Step: step, Start: time.Now()}
	if provider == "sentinel" {
		r.Name = "redis-sentinel"
	}
	t := newTB(ctx, provider, dir)
	defer func() {
		if rec := recover(); rec != nil {
			s, isStop := rec.(stopRun)
			if !isStop {
				panic(rec)
			}
			log.Printf("%s: stopped: %s", provider, s.msg)
			r.Notes = append(r.Notes, "stopped: "+s.msg)
			ok = false
		}
		if r.End.IsZero() {
			r.End = time.Now()
		}
		t.runCleanups()
	}()
	log.Printf("%s: starting the fleet", provider)
	f := startFleet(ctx, t, provider, bin)
	led, err := ledger.Open(filepath.Join(o.ledger, provider))
	if err != nil {
		t.Fatalf("ledger: %v", err)
	}
	defer led.Close()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	r.Start = start
	w := &workload{f: f, led: led, m: newMeter(start, o.duration+30*time.Minute), rate: o.rate, ctx: wctx}
	if provider == "sabotage" {
		w.rate = o.rate / 2
	}
	if err := w.start(); err != nil {
		cancel()
		w.wait()
		t.Fatalf("workload: %v", err)
	}
	log.Printf("%s: workload at %d IDs/s for %v", provider, w.rate, o.duration)
	end := start.Add(o.duration)
	r.Faults = f.runFaults(ctx, rng, end, o.interval)
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(end)):
	}
	ok = true
	// Everything healed: every server must serve again.
	if ctx.Err() == nil {
		if err := f.recover(60 * time.Second); err != nil {
			log.Printf("%s: NOT RECOVERED: %v", provider, err)
			r.Notes = append(r.Notes, "not recovered within 60s after the last heal: "+err.Error())
			ok = false
		} else if left := awaitRecovery(ctx, r, w, recoverWithin); len(left) > 0 {
			log.Printf("%s: %d faults not recovered within %v of the last heal", provider, len(left), recoverWithin)
		}
	}
	cancel()
	w.wait()
	r.End = time.Now()
	r.Buckets = w.m.buckets(r.End)
	if err := led.Close(); err != nil && !errors.Is(err, ledger.ErrClosed) {
		log.Printf("ledger close: %v", err)
	}
	res, err := led.Check(ledger.Options{})
	if err != nil {
		t.Fatalf("ledger check: %v", err)
	}
	r.IDs, r.Numbers, r.Repeated = res.IDs, res.Numbers, res.RepeatCount
	for _, rp := range res.Repeats {
		rr := report.Repeat{Space: led.SpaceName(rp.Space), Value: fmt.Sprint(rp.Value)}
		for _, e := range rp.Entries {
			rr.Entries = append(rr.Entries, fmt.Sprintf("%s at %s", led.SourceName(e.Source), e.At.UTC().Format(time.RFC3339Nano)))
		}
		r.Repeats = append(r.Repeats, rr)
	}
	if res.RepeatCount > 0 {
		fmt.Printf("%s: %d values repeated:\n", provider, res.RepeatCount)
		for i, rr := range r.Repeats {
			if provider == "sabotage" && i == 10 {
				fmt.Printf("  ... (%d more listed in the report)\n", len(r.Repeats)-i)
				break
			}
			fmt.Printf("  %s %s: %s\n", rr.Space, rr.Value, strings.Join(rr.Entries, "; "))
		}
		if provider != "sabotage" {
			ok = false
		}
	}
	// Every ID decodes to a machine its issuer could hold.
	for _, c := range w.calls {
		if c.allowed == nil {
			continue
		}
		allowed := c.allowed()
		for m, n := range c.seen {
			if !allowed[m] {
				msg := fmt.Sprintf("%s got %d IDs of machine %d; its issuers held %v", c.name, n, m, keys(allowed))
				log.Printf("%s: %s", provider, msg)
				r.Notes = append(r.Notes, msg)
				ok = false
			}
		}
		for _, b := range c.late {
			log.Printf("%s: %s: %s", provider, c.name, b)
			r.Notes = append(r.Notes, c.name+": "+b)
			ok = false
		}
		for _, b := range c.bad {
			r.Notes = append(r.Notes, c.name+": "+b)
			ok = false
		}
	}
	// Every fault must have recovered by itself, as report.Analyze
	// measures it on the buckets.
	for i, fs := range report.Analyze(r).Faults {
		if fs.Measured && !fs.Recovered {
			msg := fmt.Sprintf("fault %d (%s %s, healed at %.1fs) did not recover: %s never all answered %.0f%% of their calls for %v", i+1,
				fs.Fault.Kind, fs.Fault.Target, fs.Fault.End.Sub(start).Seconds(), strings.Join(fs.Kinds, ", "), 100*report.UpFrom, report.StableFor)
			fmt.Printf("%s: %s\n", provider, msg)
			r.Notes = append(r.Notes, msg)
			ok = false
		}
	}
	for _, s := range f.servers {
		r.Notes = append(r.Notes, fmt.Sprintf("server %s (%s store, %d runs) held machines %v", s.name, f.store[s], s.runs, keys(s.heldMachines())))
	}
	r.Notes = append(r.Notes, f.notes()...)
	if !f.clockHook && provider != "sabotage" {
		r.Notes = append(r.Notes, "clock fault left out: this vesta build has no VESTA_NEMESIS_CLOCK_FILE hook")
	}
	if secs := r.End.Sub(start).Seconds(); secs > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%.0f IDs/s and %.0f numbers/s over %.1fs of workload", float64(r.IDs)/secs, float64(r.Numbers)/secs, secs))
	}
	perKind := map[string]int{}
	for _, fl := range r.Faults {
		perKind[fl.Kind]++
	}
	var tally []string
	for _, k := range faultKinds {
		if n := perKind[k.name]; n > 0 {
			tally = append(tally, fmt.Sprintf("%s %d", k.name, n))
		}
	}
	if len(tally) > 0 {
		r.Notes = append(r.Notes, "faults: "+strings.Join(tally, ", "))
	}
	avail := availability(r.Buckets)
	for _, k := range slices.Sorted(mapsKeys(avail)) {
		r.Notes = append(r.Notes, fmt.Sprintf("%s: %.2f%% of calls answered", k, 100*avail[k]))
	}
	log.Printf("%s: %d IDs, %d numbers, %d faults, %d repeats in %v; %v", provider, r.IDs, r.Numbers, len(r.Faults), r.Repeated,
		r.End.Sub(start).Round(time.Millisecond), r.Notes)
	return r, ok
}

// recoverWithin bounds how long the workload runs on after the last heal
// for the faults to recover.
const recoverWithin = 60 * time.Second

// awaitRecovery keeps the workload running until every fault of r has
// recovered as report.Analyze measures it (its affected kinds answering
// report.UpFrom of their calls for report.StableFor), or recoverWithin
// after the last heal, or ctx's end. It returns the faults not
// recovered.
func awaitRecovery(ctx context.Context, r report.Run, w *workload, within time.Duration) []report.FaultStats {
	var last time.Time
	for _, fl := range r.Faults {
		if fl.End.After(last) {
			last = fl.End
		}
	}
	deadline := last.Add(within)
	for {
		// Whole buckets only: the one still filling would look down.
		now := r.Start.Add(time.Since(r.Start).Truncate(step))
		r.End = now
		r.Buckets = w.m.buckets(now.Add(-step))
		var left []report.FaultStats
		for _, fs := range report.Analyze(r).Faults {
			if fs.Measured && !fs.Recovered {
				left = append(left, fs)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		select {
		case <-ctx.Done():
			return left
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func mapsKeys(m map[string]float64) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func availability(bs []report.Bucket) map[string]float64 {
	ok, all := map[string]int64{}, map[string]int64{}
	for _, b := range bs {
		ok[b.Kind] += b.OK
		all[b.Kind] += b.OK + b.Err
	}
	out := map[string]float64{}
	for k, n := range all {
		if n > 0 {
			out[k] = float64(ok[k]) / float64(n)
		}
	}
	return out
}

func (f *fleet) notes() []string {
	switch f.provider {
	case "etcd":
		return []string{fmt.Sprintf("etcd: 3 members, lease_ttl %v", leaseTTL)}
	case "sentinel":
		return []string{fmt.Sprintf("redis: master + 2 replicas + 3 Sentinels (quorum 2), appendonly yes, lease_ttl %v, max_clock_skew %v, min_replicas 0 (the default; the Sentinel majority check and the quarantine are what DESIGN.md §3.7/§3.9 rest safety on)", leaseTTL, maxSkew)}
	}
	return []string{fmt.Sprintf("sabotage: two servers on fixed machine ID %d", sabotageID)}
}

// recover heals what a fault may have left and waits until every server
// answers /readyz.
func (f *fleet) recover(within time.Duration) error {
	healHosts(f.allHosts()...)
	for _, s := range f.servers {
		os.WriteFile(f.clock[s], []byte("0s\n"), 0o644)
		if !s.running() {
			if err := s.start(); err != nil {
				return err
			}
		} else {
			s.signal(syscall.SIGCONT)
		}
	}
	if f.clientProc != nil && !f.clientProc.running() {
		if err := f.clientProc.start(); err != nil {
			return err
		}
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: f.load.Dial}, Timeout: time.Second}
	deadline := time.Now().Add(within)
	for _, s := range f.servers {
		for {
			_, rest := s.addrs()
			req, _ := http.NewRequest("GET", "http://"+rest+"/readyz", nil)
			req.Host = rest
			resp, err := hc.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
				err = fmt.Errorf("/readyz %d", resp.StatusCode)
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("server %s: %v", s.name, err)
			}
			if !s.running() {
				s.start()
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}
