// Command vesta-bench is vesta's load generator: it drives one target (the
// embedded issuer, the central server through package client, the REST
// server, the Go client with its options, segment sequences) or an anchor
// measured the same way (Redis INCR, a trivial HTTP handler) and reports
// calls/s, IDs/s and latency percentiles. It is a module of its own so that
// the product module carries neither the tool nor its dependencies
// (hdrhistogram); without --addr it serves through cmd/vesta/assemble, as
// `vesta serve` does. See BENCHMARKS.md.
//
//	go -C tools/vesta-bench run . rpc -c 64 -d 10s
//	make bench-load && bin/vesta-bench rpc --addr 127.0.0.1:7070 -c 64
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/cmd/vesta/assemble"
	"github.com/vesta-go/vesta/embed"
)

// shutdownTimeout bounds the graceful stop of the servers bench starts.
const shutdownTimeout = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks errors in how the command was called: exit status 2.
var errUsage = errors.New("usage")

// run executes one command line; it is main without the process, for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newBenchCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetArgs(args)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w: %w", errUsage, err)
	})
	check := cmd.Args
	cmd.Args = func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		return nil
	}
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	if errors.Is(err, errUsage) {
		fmt.Fprintf(stderr, "vesta-bench: %s\nRun 'vesta-bench --help' for usage.\n", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return 2
	}
	fmt.Fprintf(stderr, "vesta-bench: %v\n", err)
	return 1
}

// usageIf makes a configuration the libraries refuse a usage error.
func usageIf(err error) error {
	for _, sentinel := range []error{embed.ErrConfig, client.ErrConfig, assemble.ErrConfig} {
		if errors.Is(err, sentinel) {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	return err
}
