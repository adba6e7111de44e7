package machineid_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
)

// FuzzK8sHostname: any hostname gives an ID inside the range, or an error
// that says why; never a panic.
func FuzzK8sHostname(f *testing.F) {
	for _, s := range []string{"vesta-0", "vesta-99", "vesta-100", "a-b-c-7.svc", "-", "vesta-", "x-00000000000000000000001", "vesta-1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		c := machineid.DefaultConfig()
		c.Providers, c.Hostname, c.K8sOffset = []string{machineid.ProviderK8s}, host, 924
		l, err := machineid.Acquire(context.Background(), c, core.Central)
		if err != nil {
			if !errors.Is(err, machineid.ErrUnavailable) && !errors.Is(err, machineid.ErrRange) {
				t.Fatalf("hostname %q: unexpected error %v", host, err)
			}
			return
		}
		defer l.Close(context.Background())
		if !machineid.DefaultServerRange.Contains(l.ID()) {
			t.Fatalf("hostname %q gave %d", host, l.ID())
		}
	})
}

// FuzzHoldEntry: whatever a store holds as a history entry, reading it
// neither panics nor lets a field past its bound or a control character
// through, and a value not of the machine ID is skipped with a note.
func FuzzHoldEntry(f *testing.F) {
	f.Add(`{"v":1,"machine":7,"hold":"AAAA","host":"h","pid":1,"started_ms":1790000000000,"from_ms":1790000000000,"renewed_ms":1790000001000,"mark_ms":1790000002000,"end":"released","ended_ms":1790000001500,"shape":"{\"layout\":\"sorted\",\"type\":0,\"epoch_ms\":0,\"version\":0}"}`)
	f.Add(`{"machine":8}`)
	f.Add(`{"machine":7,"host":"\u0000\u001b[2J","pid":-4,"ttl_ms":-1,"started_ms":-5,"end":"nonsense"}`)
	f.Add(`[`)
	f.Fuzz(func(t *testing.T, raw string) {
		now := time.UnixMilli(1790000000000)
		h := machineid.HistoryOf(7, []string{raw}, now)
		if len(h.Holds)+len(h.Skipped) != 1 {
			t.Fatalf("%d holds, %d notes of one entry", len(h.Holds), len(h.Skipped))
		}
		for _, e := range h.Holds {
			if e.Machine != 7 || e.PID < 0 || e.TTL < 0 || len(e.Host) > 128 || len(e.Version) > 64 || len(e.Note) > 256 ||
				strings.ContainsAny(e.Host+e.Pod+e.Version+e.Note+e.Lease+e.Hold, "\x00\x1b\x7f") {
				t.Fatalf("entry %+v", e)
			}
			switch e.End {
			case machineid.EndHeld, machineid.EndReleased, machineid.EndFenced, machineid.EndExpired:
			default:
				t.Fatalf("end %q", e.End)
			}
			_ = h.At(e.From, now) // no panic
		}
	})
}
