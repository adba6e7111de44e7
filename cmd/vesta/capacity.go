package main

import (
	"fmt"
	"io"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vesta-go/vesta/internal/capacity"
)

func newCapacityCmd() *cobra.Command {
	return documentCmd(&cobra.Command{
		Use:   "capacity [--url URL] [--token-file FILE] [--json]",
		Short: "Show how far a running server is from each limit: time field, machine IDs, sequence, segment tags",
		Long: `Read GET /v1/capacity of a running vesta serve at --url (its REST listener,
default ` + defaultStatusURL + `) and print how far it is from each limit it meets
with time and growth: the years left in the layout's time field at the
configured epoch, the machine IDs held of each lease range, the share of
time at the sequence's ceiling and the borrowing in use, and each segment
tag's numbers left before its bound with the days at the current rate.
Each line ends with ok, warning or critical; --json prints the document
itself. Exit 0 unless a part is critical, or the server cannot be reached
or answers with an error. The token as for status: --token-file FILE,
--token, else $` + envToken + `.`,
	}, "/v1/capacity", "a capacity document", writeCapacity, func(u *url.URL, r capacity.Report) error {
		if r.Status == capacity.Critical {
			return fmt.Errorf("capacity: %s: critical (the lines above say which)", u)
		}
		return nil
	})
}

// writeCapacity prints a capacity report, a line per part.
func writeCapacity(out io.Writer, r capacity.Report) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	p := func(k, status, format string, args ...any) {
		fmt.Fprintf(w, "%s\t%s\t%s\n", k, printable(fmt.Sprintf(format, args...), ""), status)
	}
	t := r.Time
	p("time field", t.Status, "%s %s from %s ends %s: %.1f years left", t.Layout, t.Type,
		t.Epoch.UTC().Format(time.RFC3339), t.End.UTC().Format(time.RFC3339), t.Years)
	m := r.Machine
	switch {
	case m.Fixed:
		p("machine IDs", m.Status, "%s", m.Note)
	case len(m.Pools) == 0:
		p("machine IDs", m.Status, "%s: no lease range", m.Provider)
	}
	for _, pl := range m.Pools {
		held := strconv.Itoa(pl.Held)
		if pl.Held < 0 {
			held = "?"
		}
		s := fmt.Sprintf("%s range %s: %s of %d held", pl.Range, pl.IDs, held, pl.Total)
		if pl.Refused > 0 {
			s += fmt.Sprintf(", %d claims refused for a full range", pl.Refused)
		}
		p("machine IDs", pl.Status, "%s", s)
	}
	if m.Error != "" {
		p("machine IDs", m.Status, "the lease store: %s", m.Error)
	}
	sq := r.Sequence
	share := "unknown yet"
	if sq.Share >= 0 {
		share = fmt.Sprintf("%.1f%% of the last %s", 100*sq.Share, seconds(sq.Window))
	}
	p("sequence", sq.Status, "at the ceiling %s (%d IDs per %s); borrowing %.1f%% of %s; %d waits",
		share, sq.PerUnit, seconds(sq.Unit), 100*sq.BorrowShare, seconds(sq.MaxBorrow), sq.Waits)
	for _, tg := range r.Segments {
		rate := "rate unknown yet"
		switch {
		case tg.DaysLeft != nil:
			rate = fmt.Sprintf("%.0f a day: %.0f days left", tg.PerDay, *tg.DaysLeft)
		case tg.PerDay == 0:
			rate = "not moving"
		}
		p("segment "+tg.Tag, tg.Status, "%d left before %d, %s; step %d, %.2f steps a minute", tg.Left, tg.Bound, rate, tg.Step, tg.StepsPerMinute)
	}
	p("status", r.Status, "at %s", r.At.UTC().Format(time.RFC3339))
	return w.Flush()
}

// seconds shows seconds as a duration: 5m0s, 1ms.
func seconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond).String()
}
