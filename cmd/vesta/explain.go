package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/vesta-go/vesta/core"
)

func newExplainCmd() *cobra.Command {
	var (
		ids    idFlags
		asJSON bool
		holder bool
		ask    serverAsk
	)
	cmd := &cobra.Command{
		Use:   "explain [--layout L] [--epoch T] [--json] [--holder [--url URL] [--token-file FILE]] ID...",
		Short: "Decode IDs into their fields and instant (reads stdin when no ID is given)",
		Long: `Decode IDs into their fields and instant, here, with --layout and --epoch.

With --holder, ask a running vesta serve at --url instead (GET
/v1/ids/{id}?holder=true; its own layout decodes): beside the fields, the
hold of the ID's machine whose span holds its instant, from the lease
store's hold history (host, pid, pod, build, lease, when it started and
ended and how), or why none is known (a fixed ID, older than the history
kept, another store). An ID inside two holds of its machine ID is a
conflict: two holders could both have issued it; explain then fails. The
token as for status: --token-file FILE, --token, else $` + envToken + `.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if holder {
				return explainHolders(cmd, &ask, args, asJSON)
			}
			codec, err := ids.codec()
			if err != nil {
				return err
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			explainOne := func(s string) error {
				id, err := core.ParseID(s)
				if err != nil {
					return err
				}
				e := codec.Explain(id)
				if asJSON {
					b, _ := json.Marshal(e)
					_, err = w.Write(append(b, '\n'))
					return err
				}
				if codec.Layout() == core.Leaf {
					// Leaf's fields; its bits record no method, so none is shown as if known.
					_, err = fmt.Fprintf(w, "%s layout=leaf time=%d worker=%d seq=%d method=unknown timestamp=%s\n",
						e.ID, e.Time, e.Machine, e.Seq, e.Timestamp())
					return err
				}
				_, err = fmt.Fprintf(w, "%s version=%d type=%d (%s) method=%d (%s) machine=%d time=%d seq=%d timestamp=%s\n",
					e.ID, e.Version, e.Type, e.Type, e.Method, e.Method, e.Machine, e.Time, e.Seq, e.Timestamp())
				return err
			}
			return errors.Join(eachInput(cmd, args, explainOne), w.Flush())
		},
	}
	ids.register(cmd.Flags(), false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per ID")
	cmd.Flags().BoolVar(&holder, "holder", false, "ask the server at --url which hold issued each ID")
	ask.register(cmd.Flags(), "/v1/ids/{id}")
	return cmd
}

// holderAnswer is GET /v1/ids/{id}?holder=true, the parts printed.
type holderAnswer struct {
	ID        string `json:"id"`
	Machine   int    `json:"machine"`
	Seq       uint64 `json:"seq"`
	Timestamp string `json:"timestamp"`
	Holder    struct {
		Known    bool     `json:"known"`
		Conflict bool     `json:"conflict"`
		Inferred bool     `json:"inferred"`
		Reason   string   `json:"reason"`
		Store    string   `json:"store"`
		Skipped  []string `json:"skipped"`
		Holds    []struct {
			Hold, Lease, Provider, Range, Host, Pod, Version, Layout string
			Self                                                     bool
			PID                                                      int
			Started, From, Renewed, Mark, Ended, End, Note           string
			EndKnown                                                 string `json:"end_known"`
		} `json:"holds"`
	} `json:"holder"`
}

// explainHolders asks the server for each ID's holder and prints it; a
// conflict is an error, after every ID is printed.
func explainHolders(cmd *cobra.Command, ask *serverAsk, args []string, asJSON bool) error {
	w := bufio.NewWriter(cmd.OutOrStdout())
	conflicts := 0
	one := func(s string) error {
		id, err := core.ParseID(s)
		if err != nil {
			return err
		}
		_, body, err := ask.get(cmd, "explain", "/v1/ids/"+id.String()+"?holder=true", true)
		if err != nil {
			return err
		}
		var a holderAnswer
		if err := json.Unmarshal(body, &a); err != nil {
			return fmt.Errorf("explain: %s: the answer is not an explanation: %w", id, err)
		}
		if a.Holder.Conflict {
			conflicts++
		}
		if asJSON {
			_, err = w.Write(printableJSON(append(bytes.TrimRight(body, "\n"), '\n')))
			return err
		}
		fmt.Fprintf(w, "%s machine=%d seq=%d timestamp=%s\n", a.ID, a.Machine, a.Seq, a.Timestamp)
		h := a.Holder
		switch {
		case h.Conflict:
			fmt.Fprintf(w, "  CONFLICT: %s\n", printable(h.Reason, ""))
		case !h.Known:
			fmt.Fprintf(w, "  holder unknown: %s\n", printable(h.Reason, ""))
		}
		for _, x := range h.Holds {
			how := "held"
			if x.End != "" {
				how = x.End + " " + x.Ended + " (" + x.EndKnown + ")"
			}
			if h.Inferred {
				how += "; matched by its inferred end"
			}
			fmt.Fprintf(w, "  holder: host=%s pid=%d", printable(x.Host, ""), x.PID)
			if x.Pod != "" {
				fmt.Fprintf(w, " pod=%s", printable(x.Pod, ""))
			}
			fmt.Fprintf(w, " version=%q %s (%s range)\n", printable(x.Version, ""), printable(x.Lease, ""), x.Range)
			mark := ""
			if x.Mark != "" {
				mark = ", mark " + x.Mark
			}
			fmt.Fprintf(w, "    from %s, started %s, last renewed %s%s; %s\n", x.From, x.Started, x.Renewed, mark, printable(how, ""))
			if x.Layout != "" {
				fmt.Fprintf(w, "    %s\n", printable(x.Layout, ""))
			}
			if x.Note != "" {
				fmt.Fprintf(w, "    note: %s\n", printable(x.Note, ""))
			}
		}
		return nil
	}
	err := errors.Join(eachInput(cmd, args, one), w.Flush())
	if conflicts > 0 {
		err = errors.Join(err, fmt.Errorf("explain: %d ID(s) inside two holds of their machine ID: two holders could both have issued them", conflicts))
	}
	return err
}

// eachInput calls one with each argument, or without arguments with
// each line of stdin (eachLine), and joins its errors: a bad one is
// reported and the others still done.
func eachInput(cmd *cobra.Command, args []string, one func(string) error) error {
	var errs []error
	each := func(s string) {
		if err := one(s); err != nil {
			errs = append(errs, err)
		}
	}
	if len(args) > 0 {
		for _, a := range args {
			each(a)
		}
	} else if err := eachLine(cmd.InOrStdin(), each); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// eachLine calls f with every non-blank line of r, trimmed.
func eachLine(r io.Reader, f func(string)) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			f(s)
		}
	}
	return sc.Err()
}
