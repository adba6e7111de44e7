package main

import (
	"bufio"
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
	)
	cmd := &cobra.Command{
		Use:   "explain [--layout L] [--epoch T] [--json] ID...",
		Short: "Decode IDs into their fields and instant (reads stdin when no ID is given)",
		RunE: func(cmd *cobra.Command, args []string) error {
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
	return cmd
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
