package main

import (
	"fmt"
	"testing"
	"time"
)

var h0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func hat(s float64) time.Time { return h0.Add(time.Duration(s * float64(time.Second))) }

// Records as vesta serve writes them (JSON, slog), with the deadline the
// fence record names.
func TestParseEvent(t *testing.T) {
	for _, c := range []struct {
		line string
		want logEvent
	}{
		{`{"time":"2026-12-01T12:00:01Z","level":"INFO","msg":"machineid: leased a machine ID","machine":937,"ttl":"3s"}`, logEvent{at: hat(1), kind: evLeased, machine: 937}},
		{`{"time":"2026-12-01T12:00:02Z","level":"INFO","msg":"machineid: re-acquired a lease; re-keying","from":937,"to":925}`, logEvent{at: hat(2), kind: evReacquired, machine: 925}},
		{`{"time":"2026-12-01T12:00:03Z","level":"ERROR","msg":"machineid: issuing fenced","machine":925,"deadline":"2026-12-01T12:00:02.5Z","err":"x"}`,
			logEvent{at: hat(3), kind: evFenced, machine: 925, deadline: hat(2.5)}},
		{`{"time":"2026-12-01T12:00:04Z","level":"INFO","msg":"machineid: issuing resumed","machine":925}`, logEvent{at: hat(4), kind: evResumed, machine: 925}},
		{`{"time":"2026-12-01T12:00:05Z","level":"WARN","msg":"nemesis clock: offset now -2.5s","was":"0s"}`, logEvent{at: hat(5), kind: evOffset, offset: -2500 * time.Millisecond}},
		{`{"time":"2026-12-01T12:00:06Z","level":"INFO","msg":"machineid: lease renewed after its deadline; it was never lost","machine":925}`, logEvent{at: hat(6), kind: evRenewLate, machine: 925}},
		{`{"time":"2026-12-01T12:00:07Z","level":"INFO","msg":"machineid: released the lease","machine":925}`, logEvent{at: hat(7), kind: evReleased, machine: 925}},
	} {
		got, ok := parseEvent([]byte(c.line))
		if !ok || got != c.want {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", c.line, got, ok, c.want)
		}
	}
	for _, line := range []string{`{"time":"2026-12-01T12:00:01Z","msg":"serving?"}`, `not json`, `{"msg":"machineid: issuing fenced"}`} {
		if ev, ok := parseEvent([]byte(line)); ok {
			t.Errorf("%s: %+v; want nothing", line, ev)
		}
	}
}

func ev(s float64, k evKind, m int) logEvent { return logEvent{at: hat(s), kind: k, machine: m} }

func fence(s, deadline float64, m int) logEvent {
	e := ev(s, evFenced, m)
	if deadline > 0 {
		e.deadline = hat(deadline)
	}
	return e
}

// The windows of a run: a claim, a fence at a deadline passed while
// paused, a claim again on another ID and its resume, a late renewal's
// resume, and the exit.
func TestWindows(t *testing.T) {
	r := &runLog{server: "A", n: 1, borrow: time.Second, start: hat(0), exit: hat(30), events: []logEvent{
		ev(1, evLeased, 924),
		fence(8, 5, 924), // paused past its deadline: logged at 8, fenced at 5
		ev(9, evReacquired, 925),
		ev(12, evResumed, 925),
		fence(15, 14.5, 925),
		ev(16, evRenewLate, 925),
		ev(16.001, evResumed, 925),
	}}
	got := r.windows()
	want := []string{"924 1-8 deadline 5", "925 9-15 deadline 14.5", "925 16-30"}
	if len(got) != len(want) {
		t.Fatalf("windows %+v; want %v", got, want)
	}
	for i, w := range got {
		s := fmt.Sprintf("%d %g-%g", w.machine, w.open.Sub(h0).Seconds(), w.close.Sub(h0).Seconds())
		if !w.deadline.IsZero() {
			s += fmt.Sprintf(" deadline %g", w.deadline.Sub(h0).Seconds())
		}
		if s != want[i] {
			t.Errorf("window %d: %s; want %s", i, s, want[i])
		}
	}
}

// An ID's time field must fall in a window of its issuer: not before
// it opened, not after the fence plus the borrow. In seconds and in
// milliseconds, and with the clock hook's offset.
func TestSpanAllows(t *testing.T) {
	r := &runLog{server: "A", borrow: time.Second, start: hat(0), events: []logEvent{
		ev(10, evLeased, 924),
		fence(30, 20.4, 924),
	}}
	w := r.windows()[0]
	s := w.span()
	sec := func(x float64) int64 { return unitOf(hat(x).UnixNano(), time.Second) }
	ms := func(x float64) int64 { return unitOf(hat(x).UnixNano(), time.Millisecond) }
	for _, c := range []struct {
		u    int64
		unit time.Duration
		want bool
	}{
		{sec(9.9), time.Second, false},
		{sec(10), time.Second, true},
		{sec(20.4), time.Second, true},
		{sec(21.3), time.Second, true}, // borrowed: a second ahead of the clock
		{sec(22), time.Second, false},  // issued after the fence
		{ms(20.4) + 1000, time.Millisecond, true},
		{ms(20.4) + 1001, time.Millisecond, false},
		{ms(9.999), time.Millisecond, false},
	} {
		if got := s.allows(c.u, c.unit); got != c.want {
			t.Errorf("allows(%d %v) = %v; want %v", c.u, c.unit, got, c.want)
		}
		if got := (spans{s}).units(c.unit).contains(c.u); got != c.want {
			t.Errorf("units(%v).contains(%d) = %v; want %v", c.unit, c.u, got, c.want)
		}
	}
	// The clock stepped 3s back during the window: the lower bound
	// follows it; without a deadline, the upper bound is the fence's
	// record on the clock at its most ahead.
	r = &runLog{server: "A", borrow: 0, start: hat(0), events: []logEvent{
		ev(10, evLeased, 924),
		{at: hat(12), kind: evOffset, offset: -3 * time.Second},
		{at: hat(14), kind: evOffset, offset: 2 * time.Second},
		fence(20, 0, 924),
	}}
	s = r.windows()[0].span()
	if !s.allows(sec(7), time.Second) || s.allows(sec(6.9), time.Second) || !s.allows(sec(22), time.Second) || s.allows(sec(23), time.Second) {
		t.Errorf("span with offsets: %v..%v", time.Unix(0, s.lo).UTC(), time.Unix(0, s.hi).UTC())
	}
	// The machine's wall clock stepped 300 ms ahead since the run began:
	// its issuing clock lags the records' times by that much, so a window
	// opened at 13.24 s on the wall issues at 12.94 s on its clock.
	resumed := ev(13.24, evRenewLate, 924)
	resumed.drift = 300 * time.Millisecond
	r = &runLog{server: "A", borrow: 0, start: hat(0), events: []logEvent{ev(1, evLeased, 924), fence(5, 3, 924), resumed, ev(13.241, evResumed, 924)}}
	s = r.windows()[1].span()
	if !s.allows(sec(12), time.Second) || s.allows(sec(11), time.Second) {
		t.Errorf("span with drift: from %v", time.Unix(0, s.lo).UTC())
	}
}

// A handover is a claim of an ID whose previous holder still ran on it:
// not one after the holder died, nor one after it had moved to another
// ID, nor the holder's own claim again.
func TestHandovers(t *testing.T) {
	a := &runLog{server: "A", n: 1, start: hat(0), exit: hat(50)}
	s1 := &runLog{server: "S1", n: 1, start: hat(5), exit: hat(12)}
	s2 := &runLog{server: "S2", n: 3, start: hat(20)}
	b := &runLog{server: "B", n: 1, start: hat(0), exit: hat(25)}
	c := &runLog{server: "C", n: 2, start: hat(30)}
	a.events = []logEvent{ev(1, evLeased, 924), ev(14, evReacquired, 924), ev(40, evReacquired, 926)}
	s1.events = []logEvent{ev(6, evLeased, 924)}  // A alive on 924: a handover
	s2.events = []logEvent{ev(21, evLeased, 924)} // A claimed 924 again at 14 and still runs: a handover
	b.events = []logEvent{ev(1, evLeased, 925)}
	c.events = []logEvent{ev(31, evLeased, 925), ev(35, evReacquired, 926)} // B died at 25: none; 926 never held before
	// A takes 926 from C, alive on it: a handover.
	hs := handovers(claims([]*runLog{a, s1, s2, b, c}))
	var got []string
	for _, h := range hs {
		got = append(got, fmt.Sprintf("%d %s<-%s at %g", h.machine, h.run.server, h.from.server, h.at.Sub(h0).Seconds()))
	}
	want := []string{"924 S1<-A at 6", "924 S2<-A at 21", "926 A<-C at 40"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("handovers %v; want %v", got, want)
	}
}
