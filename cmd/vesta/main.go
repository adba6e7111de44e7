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
	"github.com/spf13/pflag"
	"github.com/vesta-go/vesta/conf"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit status 2 is a mistake of the caller's, named in the message:
// errUsage in how the command was called (a flag, an argument: the
// message ends with the usage hint), errConfig in a configuration value
// (a key, a variable, a flag's value: the message names it, and the hint
// would not help). Other errors are run-time failures: status 1.
var (
	errUsage  = errors.New("usage")
	errConfig = errors.New("config")
)

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
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "vesta: %s\nRun 'vesta help' for usage.\n", strings.TrimPrefix(msg, errUsage.Error()+": "))
		return 2
	case errors.Is(err, errConfig):
		fmt.Fprintf(stderr, "vesta: %s\n", strings.TrimPrefix(msg, errConfig.Error()+": "))
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
and where they were made. IDs print as unsigned decimals, one per line; every
command that prints data takes --json.

Configuration (serve, gen, seq, config): the defaults, then a YAML file, then
VESTA_* variables, then flags, each overriding the one before. The file is
--config FILE, else $VESTA_CONFIG, else the first that exists of
  ` + strings.Join(conf.SearchPath(nil), "\n  ") + `
and --config '' (or VESTA_CONFIG='') reads none. vesta config print shows
every effective value and where it came from; vesta config check judges it.

Exit status: 0 done; 1 a failure at run time (a server or store that does not
answer, an ID that does not parse); 2 a mistake in the command line or the
configuration, named in the message.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Flag parse errors (unknown flag, bad number) are usage errors; an
	// unknown flag is answered with the nearest the command has.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if s := suggestFlag(c, err); s != "" {
			return fmt.Errorf("%w: %w; did you mean --%s?", errUsage, err, s)
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	})
	root.AddCommand(newServeCmd(), newGenCmd(), newExplainCmd(), newMakeCmd(), newVersionCmd(), newHealthCmd(),
		newSeqCmd(), newConfigCmd(), newStatusCmd(), newCapacityCmd(), newMaskCmd(), newUnmaskCmd())
	for _, c := range root.Commands() {
		if c.Args != nil {
			c.Args = usageArgs(c.Args)
		}
	}
	for _, c := range []*cobra.Command{root, findCmd(root, "seq"), findCmd(root, "config")} {
		groupCmd(c)
	}
	return root
}

func findCmd(root *cobra.Command, name string) *cobra.Command {
	c, _, err := root.Find([]string{name})
	if err != nil || c == root {
		panic("vesta: no command " + name) // a programming error
	}
	return c
}

// groupCmd makes a command of subcommands answer a word it lacks with a
// usage error (exit 2, the nearest subcommand suggested), and print its
// help when called alone: cobra would print the help and exit 0 for a
// word below the root, and exit 1 at the root.
func groupCmd(c *cobra.Command) {
	c.Args = cobra.ArbitraryArgs
	c.SuggestionsMinimumDistance = 2 // cobra's own default, which only its error path sets
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return fmt.Errorf("%w: %s", errUsage, msg)
	}
}

// suggestFlag returns the flag of c nearest to the unknown one of err
// (--machin, or -machine, which pflag reads as shorthands), or "".
func suggestFlag(c *cobra.Command, err error) string {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return ""
	}
	typed := ne.GetSpecifiedName()
	if sh := ne.GetSpecifiedShortnames(); sh != "" {
		typed = sh // -machine: a long name given one dash
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	return conf.Suggest(typed, names)
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
