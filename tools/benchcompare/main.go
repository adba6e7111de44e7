package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// groups are the measurement groups, in the order they run.
var groups = []string{"embedded", "central", "rest"}

// options are the command's flags.
type options struct {
	rev      string        // the revision compared with; "" = the last tag, else main~1
	rounds   int           // interleaved rounds
	duration time.Duration // one measurement
	callers  int           // central: the many-callers setting
	only     []string      // groups to run
	smoke    bool          // about 10 s of measuring
}

// Bounds of the flags.
const (
	maxRounds   = 50
	minDuration = 100 * time.Millisecond
	maxDuration = 10 * time.Minute
	maxCallers  = 1024
)

// errUsage marks a bad command line: exit status 2.
var errUsage = errors.New("usage")

// parse reads args into options, refusing a bad flag by its name.
func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("benchcompare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.rev, "rev", "", "the revision to compare with (a tag, branch or commit; default: the last tag, else main~1; with -smoke: HEAD)")
	fs.IntVar(&o.rounds, "rounds", 3, fmt.Sprintf("interleaved rounds, 1-%d", maxRounds))
	fs.DurationVar(&o.duration, "duration", 3*time.Second, fmt.Sprintf("one measurement (a load run, a Go benchmark's -benchtime), %v-%v", minDuration, maxDuration))
	fs.IntVar(&o.callers, "callers", 64, fmt.Sprintf("central: the many callers, 1-%d", maxCallers))
	only := fs.String("only", strings.Join(groups, ","), "the groups to run, comma-separated: "+strings.Join(groups, ", "))
	fs.BoolVar(&o.smoke, "smoke", false, "one short round of each measurement, about 10 s in all (what CI runs); sets -rounds 1 and short durations unless given")
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected argument %q; every setting is a flag", errUsage, fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.smoke {
		if !set["rounds"] {
			o.rounds = 1
		}
		if !set["duration"] {
			o.duration = 300 * time.Millisecond
		}
		if !set["rev"] {
			o.rev = "HEAD"
		}
	}
	switch {
	case o.rounds < 1 || o.rounds > maxRounds:
		return o, fmt.Errorf("%w: -rounds %d; want 1-%d", errUsage, o.rounds, maxRounds)
	case o.duration < minDuration || o.duration > maxDuration:
		return o, fmt.Errorf("%w: -duration %v; want %v-%v", errUsage, o.duration, minDuration, maxDuration)
	case o.callers < 1 || o.callers > maxCallers:
		return o, fmt.Errorf("%w: -callers %d; want 1-%d", errUsage, o.callers, maxCallers)
	case set["rev"] && strings.TrimSpace(o.rev) == "":
		return o, fmt.Errorf("%w: -rev is empty; name a tag, branch or commit", errUsage)
	case strings.HasPrefix(o.rev, "-"):
		return o, fmt.Errorf("%w: -rev %q: not a revision", errUsage, o.rev)
	}
	for g := range strings.SplitSeq(*only, ",") {
		g = strings.TrimSpace(g)
		if !slices.Contains(groups, g) {
			return o, fmt.Errorf("%w: -only %q: %q is no group; want some of %s", errUsage, *only, g, strings.Join(groups, ", "))
		}
		if !slices.Contains(o.only, g) {
			o.only = append(o.only, g)
		}
	}
	return o, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process, for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "benchcompare: %s\n", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return 2
	}
	if err := compare(ctx, o, args, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "benchcompare: %v\n", err)
		return 1
	}
	return 0
}
