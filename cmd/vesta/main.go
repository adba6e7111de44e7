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

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks errors in how the command was called: exit status 2.
var errUsage = errors.New("usage")

// run executes one command line; it is main without the process, for tests.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	// An error may quote a server or a store; the newlines of joined
	// errors stay.
	msg := printable(err.Error(), "\n\t")
	if errors.Is(err, errUsage) {
		fmt.Fprintf(stderr, "vesta: %s\nRun 'vesta help' for usage.\n", strings.TrimPrefix(msg, errUsage.Error()+": "))
		return 2
	}
	fmt.Fprintf(stderr, "vesta: %s\n", msg)
	return 1
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "vesta",
		Short: "vesta hands out 64-bit unique IDs that sort by time and decode back",
		Long: `vesta hands out 64-bit unique IDs that sort by time and decode back into when
and where they were made. IDs print as unsigned decimals, one per line.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Flag parse errors (unknown flag, bad number) are usage errors.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w: %w", errUsage, err)
	})
	root.AddCommand(newServeCmd(), newGenCmd(), newExplainCmd(), newMakeCmd(), newVersionCmd(), newHealthCmd(), newSeqCmd())
	for _, c := range root.Commands() {
		if c.Args != nil {
			c.Args = usageArgs(c.Args)
		}
	}
	return root
}

// usageArgs makes argument errors (an extra word, a missing one) usage errors.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		return nil
	}
}
