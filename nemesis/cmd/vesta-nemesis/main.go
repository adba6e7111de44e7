// Command vesta-nemesis tries to make vesta issue one ID or one sequence
// number twice: a fleet of real processes (vesta serve, etcd or Redis
// under Sentinel, MariaDB, Redis) in network namespaces, a workload
// recording every value it receives in a ledger, and faults from a
// seeded schedule. It exits 0 only when no value repeated (with
// --sabotage, only when one did).
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"maps"
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
	seed         int64
	duration     time.Duration
	providers    []string
	rate         int
	interval     time.Duration
	out          string
	ledger       string
	keep         bool
	sabotage     bool
	repo         string
	standbys     int
	faults       []string // the fault kinds to run; empty: all
	minHandovers int
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("vesta-nemesis", flag.ContinueOnError)
	fs.Int64Var(&o.seed, "seed", 0, "seed of every random choice (default: from the time)")
	fs.DurationVar(&o.duration, "duration", 90*time.Second, "workload time per provider")
	providers := fs.String("providers", "etcd,sentinel", "machine-ID providers to run, in order: etcd, sentinel")
	fs.IntVar(&o.rate, "rate", 20000, "IDs per second, all callers together")
	fs.DurationVar(&o.interval, "interval", 4*time.Second, "longest gap between two faults")
	fs.StringVar(&o.out, "out", "", "directory for report.md and its pictures, picture-<run>.svg (default: a temporary one)")
	fs.StringVar(&o.ledger, "ledger", "", "directory for the ledgers (default: under the temporary directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directories (logs, data)")
	fs.BoolVar(&o.sabotage, "sabotage", false, "run an unsafe fleet (two servers on one fixed machine ID) that must show repeats")
	fs.StringVar(&o.repo, "repo", "", "the vesta repository (default: found from the working directory)")
	fs.IntVar(&o.standbys, "standbys", 2, "standby servers per fleet, leasing from the primaries' full range (0-8)")
	faults := fs.String("faults", "all", "fault kinds to run, comma-separated, or all")
	fs.IntVar(&o.minHandovers, "min-handovers", 0, "handovers each provider run must count: the schedule runs on (favouring the kinds that make them) until it has, and the run fails without")
	ci := fs.Bool("ci", false, "the short run for CI: --seed 1 --duration 30s --interval 3s --min-handovers 10, both providers, every fault kind (flags given too win)")
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
		if !set["min-handovers"] {
			o.minHandovers = 10
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
	if o.standbys < 0 || o.standbys > 8 {
		return o, fmt.Errorf("--standbys %d: want 0 to 8", o.standbys)
	}
	if o.minHandovers < 0 || o.minHandovers > 100000 {
		return o, fmt.Errorf("--min-handovers %d: want 0 to 100000", o.minHandovers)
	}
	if o.minHandovers > 0 && o.standbys == 0 {
		return o, fmt.Errorf("--min-handovers %d with --standbys 0: without standbys nobody takes a live holder's ID", o.minHandovers)
	}
	if *faults != "all" {
		for _, k := range strings.Split(*faults, ",") {
			k = strings.TrimSpace(k)
			if !slices.ContainsFunc(faultKinds, func(fk faultKind) bool { return fk.name == k }) {
				var names []string
				for _, fk := range faultKinds {
					names = append(names, fk.name)
				}
				return o, fmt.Errorf("--faults: %q is no fault kind; want all, or some of %s", k, strings.Join(names, ","))
			}
			if slices.Contains(o.faults, k) {
				return o, fmt.Errorf("--faults: %q listed twice", k)
			}
			o.faults = append(o.faults, k)
		}
	}
	if o.minHandovers > 0 && len(o.faults) > 0 && !slices.ContainsFunc(o.faults, func(k string) bool {
		return slices.ContainsFunc(faultKinds, func(fk faultKind) bool { return fk.name == k && fk.handovers })
	}) {
		var makers []string
		for _, fk := range faultKinds {
			if fk.handovers {
				makers = append(makers, fk.name)
			}
		}
		return o, fmt.Errorf("--min-handovers %d with --faults %s: none of those kinds makes handovers (%s do)", o.minHandovers, *faults, strings.Join(makers, ", "))
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
	ids, numbers, faults, failed, handovers, repeats, afterFence, expected int64
}

// line is the summary's last line: what a run found, in one line.
func (s summary) line(seed int64) string {
	out := fmt.Sprintf("nemesis: seed %d, %d IDs, %d numbers, %d faults", seed, s.ids, s.numbers, s.faults)
	if s.failed > 0 {
		out += fmt.Sprintf(" (%d more failed to inject)", s.failed)
	}
	out += fmt.Sprintf(", %d handovers, %d repeats, %d IDs after a fence", s.handovers, s.repeats, s.afterFence)
	if s.expected > 0 {
		out += fmt.Sprintf(", %d expected repeats (not survived by design)", s.expected)
	}
	return out
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
		sum.failed += int64(len(r.Failed))
		sum.handovers += int64(len(r.Handovers))
		sum.repeats += r.Repeated
		sum.afterFence += r.AfterFence
		for _, ns := range r.NotSurvived {
			sum.expected += ns.Repeats
		}
		failed = failed || !ok
		// The evidence of a repeat in a safe fleet is kept.
		keep = keep || ((r.Repeated > 0 || r.AfterFence > 0) && p != "sabotage")
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
	case o.sabotage && !failed:
		log.Printf("sabotage: the unsafe fleet showed %d repeats of IDs and of numbers, as it must", sum.repeats)
	case o.sabotage:
		log.Print("sabotage: the checker did not find what the unsafe fleet planted (see above)")
		code = 1
	case sum.repeats > 0 || sum.afterFence > 0 || failed:
		code = 1
	}
	fmt.Println(sum.line(o.seed))
	return code
}

func writeReport(dir string, runs []report.Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// One picture per run, beside the report that shows it.
	for i := range runs {
		runs[i].Picture = fmt.Sprintf("picture-%s.svg", runs[i].Name)
	}
	md, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return err
	}
	defer md.Close()
	if err := report.Markdown(md, runs...); err != nil {
		return err
	}
	for _, r := range runs {
		sv, err := os.Create(filepath.Join(dir, r.Picture))
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

// runProvider runs one fleet; ok is false when it found repeats or IDs
// after a fence, or something else went wrong (setup, a fault that never
// recovered, IDs of the wrong machine, a value not recorded, too few
// handovers); for the sabotage, when it did not find both kinds of
// repeat it planted.
func runProvider(ctx context.Context, o options, provider, bin, dir string, rng *rand.Rand) (r report.Run, ok bool) {
	r = report.Run{Name: provider, Seed: o.seed, Step: step, Start: time.Now()}
	if provider == "sentinel" {
		r.Name = "redis-sentinel"
	}
	t := newTB(ctx, provider, dir)
	fctx, stopFleet := context.WithCancel(ctx)
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
		stopFleet()
		t.runCleanups()
	}()
	log.Printf("%s: starting the fleet", provider)
	f := startFleet(fctx, t, provider, bin, fleetOptions{primaries: 3, standbys: o.standbys})
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
	for _, s := range f.servers {
		if s.role == roleStandby || s.role == roleMix {
			r.Spare = append(r.Spare, "rest-"+s.name, "rpc-"+s.name)
		}
	}
	log.Printf("%s: workload at %d IDs/s for %v", provider, w.rate, o.duration)
	end := start.Add(o.duration)
	so := scheduleOptions{end: end, hardEnd: end.Add(max(o.duration, 3*time.Minute)), interval: o.interval, handovers: f.handoverCount}
	if provider != "sabotage" {
		so.minHandovers = o.minHandovers
	}
	faults, failedFaults, left := f.runFaults(ctx, rng, so, o.faults)
	for _, fl := range faults {
		r.Faults = append(r.Faults, fl.Fault)
	}
	for _, fl := range failedFaults {
		r.Failed = append(r.Failed, fl.Fault)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(end)):
	}
	ok = true
	// Everything healed: every server that must serve does again.
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
	stopFleet() // no restart from here on: the logs are complete
	for _, s := range f.servers {
		s.stop()
	}
	r.End = time.Now()
	r.Buckets = w.m.buckets(r.End)
	if err := led.Close(); err != nil && !errors.Is(err, ledger.ErrClosed) {
		w.fail("ledger: closing: %v", err)
	}
	runs := f.runLogs()
	leased := map[int]bool{}
	if provider != "sabotage" {
		for m := firstLeased; m < firstLeased+f.primaries; m++ {
			leased[m] = true
		}
		if f.mixLong != nil {
			leased[mixID] = true
		}
	}
	via := map[ledger.Source]string{}
	for _, c := range w.calls {
		if c.via != nil {
			via[led.Source(c.name)] = c.via.name
		}
	}
	chk := newChecker(led, runs, via, leased)
	f.mu.Lock()
	chk.guard, chk.guardID, chk.lost = f.classes[classOldGuard] > 0, guardID, f.lost
	classes := maps.Clone(f.classes)
	f.mu.Unlock()
	res, err := led.Check(ledger.Options{MaxRepeats: -1, Visit: chk.visit})
	if err != nil {
		t.Fatalf("ledger check: %v", err)
	}
	chk.flush()
	r.IDs, r.Numbers = res.IDs, res.Numbers
	r.Repeated, r.Repeats = chk.idRepeats+chk.numRepeats, chk.repeats
	r.FenceChecked, r.AfterFence, r.AfterFenceList = chk.checked, chk.after, chk.afterList
	r.NotSurvived = chk.notSurvived(classes)
	for _, h := range handovers(claims(runs)) {
		r.Handovers = append(r.Handovers, report.Handover{At: h.at, Machine: h.machine,
			From: fmt.Sprintf("%s (run %d)", h.from.server, h.from.n), To: fmt.Sprintf("%s (run %d)", h.run.server, h.run.n), Fault: causeOf(faults, h)})
	}
	if r.Repeated > 0 {
		by := chk.sourceNotes()
		r.Notes = append(r.Notes, by...)
		fmt.Printf("%s: %d values repeated (%s):\n", provider, r.Repeated, strings.Join(by, "; "))
		for i, rr := range r.Repeats {
			if i == 10 {
				fmt.Printf("  ... (%d more listed in the report)\n", len(r.Repeats)-i)
				break
			}
			fmt.Printf("  %s %s: %s\n", rr.Space, rr.Value, strings.Join(rr.Entries, "; "))
		}
	}
	if r.AfterFence > 0 {
		fmt.Printf("%s: %d IDs issued after their issuer was fenced:\n", provider, r.AfterFence)
		for _, a := range r.AfterFenceList {
			fmt.Printf("  %s\n", a)
		}
	}
	switch {
	case provider == "sabotage":
		// Both plants must show: the IDs of two servers on one machine
		// ID, and the numbers of two stores on one tag's range.
		msg := fmt.Sprintf("sabotage: %d repeated IDs and %d repeated numbers", chk.idRepeats, chk.numRepeats)
		if chk.idRepeats == 0 || chk.numRepeats == 0 {
			msg += "; want both"
			ok = false
		}
		log.Print(msg)
		r.Notes = append(r.Notes, msg)
	case r.Repeated > 0 || r.AfterFence > 0:
		ok = false
	}
	if errs, n := w.failures(); n > 0 {
		msg := fmt.Sprintf("%d values may not have been recorded (a failed write, flush or frame): %s", n, strings.Join(errs, "; "))
		log.Printf("%s: %s", provider, msg)
		r.Notes = append(r.Notes, msg)
		ok = false
	}
	if so.minHandovers > 0 && len(r.Handovers) < so.minHandovers && ctx.Err() == nil {
		msg := fmt.Sprintf("%d handovers; --min-handovers wants %d", len(r.Handovers), so.minHandovers)
		log.Printf("%s: %s", provider, msg)
		r.Notes = append(r.Notes, msg)
		ok = false
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
		r.Notes = append(r.Notes, fmt.Sprintf("server %s (%s, %s store, %d runs) held machines %v", s.name, roleNames[s.role], cmp.Or(f.store[s], "no"), len(s.runLogs()), keys(s.heldMachines())))
	}
	r.Notes = append(r.Notes, unexpectedExits(f)...)
	if d := maxDrift(runs); d > 50*time.Millisecond {
		r.Notes = append(r.Notes, fmt.Sprintf("the machine's wall clock moved up to %v apart from the monotonic clock during a server's run (a step: NTP, or another process); the fence check reckons each server's clock with it", d.Round(time.Millisecond)))
	}
	r.Notes = append(r.Notes, f.notes()...)
	r.Notes = append(r.Notes, left...)
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
	for _, k := range slices.Sorted(maps.Keys(avail)) {
		r.Notes = append(r.Notes, fmt.Sprintf("%s: %.2f%% of calls answered", k, 100*avail[k]))
	}
	log.Printf("%s: %d IDs, %d numbers, %d faults (%d failed to inject), %d handovers, %d repeats, %d IDs after a fence in %v", provider, r.IDs, r.Numbers,
		len(r.Faults), len(r.Failed), len(r.Handovers), r.Repeated, r.AfterFence, r.End.Sub(start).Round(time.Millisecond))
	return r, ok
}

// maxDrift is the largest drift (logEvent.drift) any record of the runs
// saw, either way.
func maxDrift(runs []*runLog) time.Duration {
	var m time.Duration
	for _, r := range runs {
		for _, e := range r.events {
			m = max(m, e.drift, -e.drift)
		}
	}
	return m
}

var roleNames = map[role]string{rolePrimary: "primary", roleStandby: "standby", roleFixed: "fixed ID", roleGuard: "fixed ID, guard restored",
	roleMix: "the Redis pair of timings", roleSabotage: "sabotage"}

// causeOf is the kind of the fault that made a handover: of the faults
// held at the claim, or healed less than attributeFor before it, that hit
// the previous holder's server or the whole lease store, the latest to
// start; "" for none.
func causeOf(faults []faultRecord, h handover) string {
	kind := ""
	var latest time.Time
	for _, fl := range faults {
		if fl.Start.After(h.at) || (!fl.End.IsZero() && h.at.After(fl.End.Add(attributeFor))) {
			continue
		}
		if (fl.store || slices.Contains(fl.servers, h.from.server)) && fl.Start.After(latest) {
			kind, latest = fl.Kind, fl.Start
		}
	}
	return kind
}

// attributeFor is how long after its heal a fault may still cause a
// handover: the longest lease TTL's takeover after the holder's last
// renewal, and some.
const attributeFor = 2 * mixLongTTL

// unexpectedExits lists the runs of servers that ended after serving
// without the nemesis ending them (the supervisor restarted them).
func unexpectedExits(f *fleet) []string {
	var out []string
	for _, s := range f.servers {
		for _, r := range s.runLogs() {
			if r.ended == "" && !r.exit.IsZero() && slices.ContainsFunc(r.events, func(e logEvent) bool { return e.kind == evServing }) {
				out = append(out, fmt.Sprintf("server %s run %d exited by itself (code %d) at %s after serving; its log: %s", s.name, r.n, r.code, r.exit.UTC().Format(time.RFC3339Nano), s.logf.Name()))
			}
		}
	}
	return out
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
		return []string{fmt.Sprintf("etcd: 3 members, lease range %s (%d primaries, %d standbys); lease_ttl %v, the standbys' %s",
			f.leaseRange(), f.primaries, f.standbys, leaseTTL, standbyNote("etcd"))}
	case "sentinel":
		return []string{fmt.Sprintf("redis: master + 2 replicas + 3 Sentinels (quorum 2), appendonly yes, lease range %s (%d primaries, %d standbys), lease_ttl %v, max_clock_skew %v, min_replicas 0 (the default; the Sentinel majority check and the quarantine are what docs/design/sentinel.md and redis-data-loss.md rest safety on); the standbys' %s",
			f.leaseRange(), f.primaries, f.standbys, leaseTTL, maxSkew, standbyNote("sentinel")),
			fmt.Sprintf("the pair of timings under %s, machine %d: X lease_ttl %v, time_guard.window %v; Y lease_ttl %v, max_clock_skew %v, max_borrow %v",
				mixPrefix, mixID, mixLongTTL, mixLongWindow, mixShortTTL, mixShortSkew, time.Duration(mixShortBorrow))}
	}
	return []string{fmt.Sprintf("sabotage: two servers on fixed machine ID %d, each with a segment Redis of its own holding r.order from 1", sabotageID)}
}

// standbyNote says the standbys' timings.
func standbyNote(provider string) string {
	var out []string
	for _, t := range standbyTimings {
		ttl := t.ttl
		if provider == "etcd" {
			ttl = t.etcdTTL
		}
		s := fmt.Sprintf("lease_ttl %v, max_borrow %v", ttl, t.borrow)
		if provider != "etcd" {
			s += fmt.Sprintf(", max_clock_skew %v", t.skew)
		}
		out = append(out, s)
	}
	return "timings in turn: " + strings.Join(out, "; ")
}

// recover heals what a fault may have left and waits until every server
// whose callers the run measures (not a standby nor the Redis pair)
// answers /readyz.
func (f *fleet) recover(within time.Duration) error {
	healHosts(f.allHosts()...)
	for _, fws := range f.leaseFwd {
		for _, fw := range fws {
			fw.SetDelay(0, 0)
		}
	}
	for _, c := range f.embClocks {
		c.SetShift(0)
	}
	for _, file := range f.redisClock {
		writeFaketime(f, file, "+0")
	}
	if f.clientProc != nil {
		stepClock(f, f.clientProc.clock, 0)
	}
	for _, s := range f.servers {
		stepClock(f, f.clock[s], 0)
		s.setDown(false)
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
		if s.role == roleStandby || s.role == roleMix {
			continue
		}
		for {
			req, _ := http.NewRequest("GET", "http://"+s.rest+"/readyz", nil)
			req.Host = s.rest
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
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}
