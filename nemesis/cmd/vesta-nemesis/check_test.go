package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/nemesis/ledger"
)

// sortedID makes a max-peak sorted-layout ID of the second at, machine m
// and sequence seq.
func sortedID(at time.Time, m int, seq uint64) uint64 {
	u := unitOf(at.UnixNano(), time.Second)
	return uint64(u)<<32 | uint64(m)<<20 | seq
}

// The checker finds an ID issued after its issuer's fence though nothing
// repeats it, lets the same ID through from a caller over every server
// (another server may have held the ID then), and sorts repeats into
// real ones and those of a case not survived by design.
func TestChecker(t *testing.T) {
	led, err := ledger.OpenShards(t.TempDir(), 4)
	if err != nil {
		t.Fatal(err)
	}
	a := &runLog{server: "A", n: 1, borrow: time.Second, start: hat(0), exit: hat(60), events: []logEvent{
		ev(10, evLeased, 924),
		fence(25, 20, 924),
	}}
	s1 := &runLog{server: "S1", n: 1, borrow: time.Second, start: hat(21), exit: hat(60), events: []logEvent{ev(22.5, evLeased, 924)}}
	viaA, anyone := led.Source("rest via A"), led.Source("client-0 via all")
	orders := led.Tag("m.order")
	w1, w2 := led.Writer(viaA), led.Writer(anyone)
	late := sortedID(hat(23), 924, 7) // A's deadline was 20, its borrow 1s
	for _, add := range []struct {
		w  *ledger.Writer
		sp ledger.Space
		v  uint64
	}{
		{w1, ledger.IDs, sortedID(hat(15), 924, 1)},
		{w1, ledger.IDs, late},
		{w2, ledger.IDs, late},                      // S1 held 924 then: fine for a caller over all
		{w2, ledger.IDs, sortedID(hat(15), 924, 1)}, // a repeat
		{w1, ledger.IDs, sortedID(hat(15), guardID, 3)},
		{w2, ledger.IDs, sortedID(hat(15), guardID, 3)}, // the guard's case
		{w1, orders, 150},
		{w2, orders, 150}, // lost with a commit
		{w1, orders, 300},
		{w2, orders, 300}, // not lost: a repeat
	} {
		if err := add.w.Add(add.sp, hat(30), add.v); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(w1.Flush(), w2.Flush(), led.Close()); err != nil {
		t.Fatal(err)
	}
	c := newChecker(led, []*runLog{a, s1}, map[ledger.Source]string{viaA: "A"}, map[int]bool{924: true, 925: true})
	c.guard, c.guardID = true, guardID
	c.lost = map[string][][2]int64{"m.order": {{100, 200}}}
	if _, err := led.Check(ledger.Options{MaxRepeats: -1, Visit: c.visit}); err != nil {
		t.Fatal(err)
	}
	c.flush()
	if c.after != 1 || len(c.afterList) != 1 || !strings.Contains(c.afterList[0], "received by rest via A") {
		t.Errorf("after a fence: %d %q; want the one late ID via A", c.after, c.afterList)
	}
	if c.checked != 4 {
		t.Errorf("checked %d IDs; want the 4 of machine 924", c.checked)
	}
	if c.idRepeats != 2 || c.numRepeats != 1 {
		t.Errorf("repeats: %d IDs, %d numbers; want 2 and 1 (the late ID, 924's seq 1; number 300)", c.idRepeats, c.numRepeats)
	}
	ns := c.notSurvived(map[string]int{classOldGuard: 1, classLostCommit: 1})
	if len(ns) != 2 || ns[0].Repeats != 1 || ns[1].Repeats != 1 {
		t.Errorf("not survived: %+v; want one repeat of each class", ns)
	}
	if notes := c.sourceNotes(); len(notes) != 1 || notes[0] != "3 repeats received by client-0 via all + rest via A" {
		t.Errorf("by sources: %q", notes)
	}
}
