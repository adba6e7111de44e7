package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/core"
)

// configUsage is the --config flag's help: where the file comes from.
var configUsage = `YAML configuration file; '' reads none (default: $` + conf.EnvFile + `, else the first of ` +
	strings.Join(conf.SearchPath(nil), ", ") + ` that exists)`

// searchPath is the config files tried when none is named; tests move
// its /etc entry into a directory of their own.
var searchPath = func() []string { return conf.SearchPath(nil) }

func addConfigFlag(fs *pflag.FlagSet, file *string) {
	fs.StringVar(file, "config", "", configUsage)
}

// loadConfig loads the configuration of cmd: the file of --config, or of
// VESTA_CONFIG, or the first found on the search path; with flags, the
// flags of the conf table that cmd has. An empty --config (or VESTA_CONFIG
// set and empty) reads no file.
func loadConfig(cmd *cobra.Command, file string, flags bool) (conf.Loaded, error) {
	opts := conf.Options{File: file, Search: searchPath()}
	if cmd.Flags().Changed("config") {
		opts.Search, opts.NoFile = nil, file == ""
	}
	if flags {
		opts.Flags = cmd.Flags()
	}
	l, err := conf.Load(opts)
	if err != nil {
		return l, fmt.Errorf("%w: %w", errConfig, err)
	}
	return l, nil
}

// fileOf says which config file was read, for the logs and config print.
func fileOf(l conf.Loaded) string {
	switch {
	case l.File == "":
		return "none"
	case l.Found:
		return l.File + " (found)"
	}
	return l.File
}

// checkServe is what serve judges before anything listens, and config
// check judges: Load's validation (done), something to serve, a machine
// ID a server may use, and the TLS files. Every refusal names its key
// and where its value came from.
func checkServe(l conf.Loaded) error {
	cfg := l.Config
	var errs []error
	if cfg.Central.Listen == "" && cfg.REST.Listen == "" {
		errs = append(errs, errors.New("central.listen and rest.listen are both empty: nothing to serve"))
	}
	errs = append(errs, cfg.RequireMachineIn(core.Central))
	_, err := cfg.Central.TLS.Load()
	errs = append(errs, err)
	_, err = cfg.REST.TLS.Load()
	errs = append(errs, err)
	_, err = cfg.Machine.Etcd.TLS.Load()
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", errConfig, l.Attribute(err))
	}
	return nil
}

// serveFlags are the conf flags of serve, which config check and print
// take too, to judge the command line serve would be given.
var serveFlags = []string{"machine", "layout", "type", "epoch", "data-dir",
	"central-listen", "rest-listen", "log-level", "log-format"}

func newConfigCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check or print the effective configuration (file, VESTA_* variables, flags)",
		Long: `Check or print the effective configuration: the defaults, then the YAML file,
then VESTA_* variables, then flags, each overriding the one before. With no
--config the file is $` + conf.EnvFile + `, else the first of
` + strings.Join(conf.SearchPath(nil), ", ") + `
that exists; --config '' (or ` + conf.EnvFile + `='') reads none.`,
	}
	addConfigFlag(cmd.PersistentFlags(), &file)
	cmd.AddCommand(newConfigCheckCmd(&file), newConfigPrintCmd(&file))
	return cmd
}

// keyProblem is one refusal of config check --json.
type keyProblem struct {
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
	Source  string `json:"source,omitempty"`
}

func newConfigCheckCmd(file *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check [--config FILE] [--json] [serve's flags]",
		Short: "Judge the configuration as vesta serve would: exit 0, or 2 naming every bad key",
		Long: `Judge the effective configuration as vesta serve does before it opens a port:
every key's value, something to serve, a machine ID from the server range (or
a provider that leases one), the TLS files. Exit 0 when serve would start on
it, else 2 with every refusal naming its key and where the value came from
(file, VESTA_* variable or flag). Nothing is opened or contacted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := loadConfig(cmd, *file, true)
			if err == nil {
				err = checkServe(l)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				v := struct {
					OK     bool         `json:"ok"`
					File   string       `json:"file"`
					Errors []keyProblem `json:"errors"`
				}{OK: err == nil, File: l.File, Errors: problems(err)}
				if e := writeJSON(out, v); e != nil {
					return e
				}
				return err
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(out, "configuration ok (file %s)\n", fileOf(l))
			return err
		},
	}
	conf.AddFlags(cmd.Flags(), serveFlags...)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"ok", "file", "errors": [{"key", "message", "source"}]}`)
	return cmd
}

// problems lists err's refusals by key; an error naming no key (a file
// that does not parse) is one problem without a key.
func problems(err error) []keyProblem {
	out := []keyProblem{}
	kes := conf.KeyErrors(err)
	for _, e := range kes {
		out = append(out, keyProblem{Key: e.Key, Message: e.Msg, Source: e.Source})
	}
	if err != nil && len(kes) == 0 {
		out = append(out, keyProblem{Message: strings.TrimPrefix(err.Error(), errConfig.Error()+": ")})
	}
	return out
}

func newConfigPrintCmd(file *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "print [--config FILE] [--json] [serve's flags]",
		Short: "Print every key's effective value and its source (default, file, env, flag); secrets hidden",
		Long: `Print every key of the effective configuration with its value and where the
value came from: default, file PATH, env VESTA_..., flag --..., or the secret
file it was read from. Secrets (tokens, passwords, a DSN's password, the
masking key) print as [redacted]. Lists are comma-separated and the IP table IP=ID pairs, as the
environment writes them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := loadConfig(cmd, *file, true)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			settings := l.Settings()
			if asJSON {
				return writeJSON(out, struct {
					File     string         `json:"file"`
					Settings []conf.Setting `json:"settings"`
				}{l.File, settings})
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "# file: %s\n", fileOf(l))
			fmt.Fprintln(w, "KEY\tVALUE\tSOURCE")
			for _, s := range settings {
				v := s.Value
				if v == "" {
					v = `""`
				}
				fmt.Fprintf(w, "%s\t%s\t%s\n", s.Key, printable(v, ""), printable(s.Source, ""))
			}
			return w.Flush()
		},
	}
	conf.AddFlags(cmd.Flags(), serveFlags...)
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"file", "settings": [{"key", "value", "source"}]}`)
	return cmd
}

// writeJSON writes v as one line of JSON, its non-printing runes escaped.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(printableJSON(append(b, '\n')))
	return err
}

// newLogger is the command's logger: log.format, at level, with
// durations as text ("1.5s") in both formats (slog's JSON handler would
// write a time.Duration as integer nanoseconds).
func newLogger(cfg conf.Config, w io.Writer, level slog.Leveler) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationText}
	if strings.EqualFold(cfg.Log.Format, "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
