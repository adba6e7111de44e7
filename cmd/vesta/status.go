package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/vesta-go/vesta/conf"
)

// defaultStatusURL is the REST listener of `vesta serve` by default.
var defaultStatusURL = "http://" + conf.DefaultConfig().REST.Listen

// envToken is the variable status reads the REST token from: the
// server's own rest.token variable, so a shell that starts the server
// can ask it.
var envToken = conf.EnvName("rest.token")

// serverStatus is what status reads of GET /v1/status (rest's document):
// the fields of its summary.
type serverStatus struct {
	Now           string  `json:"now"`
	Layout        string  `json:"layout"`
	TypeName      string  `json:"type_name"`
	Machine       uint16  `json:"machine"`
	Ready         string  `json:"ready"`
	Issued        uint64  `json:"issued"`
	Fenced        bool    `json:"fenced"`
	AheadMs       float64 `json:"ahead_ms"`
	ClockOffsetMs float64 `json:"clock_offset_ms"`
	Mark          *string `json:"mark"`
	Lease         *struct {
		Provider     string   `json:"provider"`
		State        string   `json:"state"`
		RenewalInMs  *float64 `json:"renewal_in_ms"`
		DeadlineInMs *float64 `json:"deadline_in_ms"`
		Error        string   `json:"error"`
	} `json:"lease"`
	Segment *struct {
		Status string            `json:"status"`
		Tags   []json.RawMessage `json:"tags"`
	} `json:"segment"`
	// Build, Started and UptimeS are the server's version and start,
	// when its document has them.
	Build *struct {
		Version  string `json:"version"`
		Revision string `json:"revision"`
	} `json:"build"`
	Started string   `json:"started"`
	UptimeS *float64 `json:"uptime_s"`
}

func newStatusCmd() *cobra.Command {
	return documentCmd(&cobra.Command{
		Use:   "status [--url URL] [--token-file FILE] [--json]",
		Short: "Show a running server's state: ready, machine ID, lease, version, clock",
		Long: `Read GET /v1/status of a running vesta serve at --url (its REST listener,
default ` + defaultStatusURL + `) and print a short summary: ready or not and why,
the machine ID and its lease, the version, the server's clock and the time
guard's mark; --json prints the document itself. Exit 0 when the server is
ready; 1 when it cannot be reached, answers with an error, or is not ready
(the summary says why). A server with rest.token wants it: --token-file FILE
or --token (which other users can read in the process list), else
$` + envToken + `.`,
	}, "/v1/status", "a vesta status document", writeStatus, func(u *url.URL, st serverStatus) error {
		if st.Ready != "ok" {
			return fmt.Errorf("status: %s: not ready: %s", u, st.Ready)
		}
		return nil
	})
}

// statusToken is --token-file's content, else --token when given, else
// $VESTA_REST_TOKEN: flags over the environment. "" sends none.
func statusToken(cmd *cobra.Command, token, file string) (string, error) {
	if cmd.Flags().Changed("token-file") {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%w: --token-file: %w", errUsage, err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	if v := os.Getenv(envToken); v != "" && !cmd.Flags().Changed("token") {
		return v, nil
	}
	return token, nil
}

func clipBody(b []byte) string {
	if len(b) > 512 {
		b = b[:512]
	}
	return strings.TrimSpace(string(b))
}

// writeStatus prints the summary of a status document.
func writeStatus(out io.Writer, st serverStatus) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	p := func(k, format string, args ...any) {
		fmt.Fprintf(w, "%s\t%s\n", k, printable(fmt.Sprintf(format, args...), ""))
	}
	switch {
	case st.Ready == "ok":
		p("state", "ready")
	case st.Fenced:
		p("state", "fenced: %s", st.Ready)
	default:
		p("state", "not ready: %s", st.Ready)
	}
	p("machine", "%d", st.Machine)
	if l := st.Lease; l != nil {
		s := l.Provider + ", " + l.State
		if l.RenewalInMs != nil && l.DeadlineInMs != nil {
			s += fmt.Sprintf(", renewal in %s, deadline in %s", ms(*l.RenewalInMs), ms(*l.DeadlineInMs))
		}
		if l.Error != "" {
			s += ": " + l.Error
		}
		p("lease", "%s", s)
	}
	if b := st.Build; b != nil && b.Version != "" {
		s := b.Version
		if b.Revision != "" {
			s += " (" + b.Revision[:min(12, len(b.Revision))] + ")"
		}
		p("version", "%s", s)
	}
	if st.Started != "" && st.UptimeS != nil {
		p("started", "%s, up %s", st.Started, (time.Duration(*st.UptimeS) * time.Second).String())
	}
	p("clock", "%s, offset %s", st.Now, ms(st.ClockOffsetMs))
	mark := "none"
	if st.Mark != nil {
		mark = *st.Mark
	}
	p("time guard", "mark %s; last ID %s ahead of the clock", mark, ms(st.AheadMs))
	p("ids", "%s layout, %s, %d issued", st.Layout, st.TypeName, st.Issued)
	if s := st.Segment; s != nil {
		p("segment", "%s, %d tags", s.Status, len(s.Tags))
	}
	return w.Flush()
}

// ms shows milliseconds as a duration: 1.5s, 250ms, 0s.
func ms(v float64) string {
	return time.Duration(v * float64(time.Millisecond)).Round(time.Millisecond).String()
}
