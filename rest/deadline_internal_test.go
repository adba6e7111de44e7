package rest

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDeadlineCtx(t *testing.T) {
	// Past its deadline, before anyone waited: Err says so, Done is closed.
	d := &deadlineCtx{Context: context.Background(), deadline: time.Now().Add(-time.Millisecond)}
	if err := d.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err past the deadline = %v", err)
	}
	<-d.Done()
	if err := d.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err after Done = %v", err)
	}
	d.release()

	// Before its deadline: the parent's cancellation comes through, both ways.
	parent, cancel := context.WithCancel(context.Background())
	d = &deadlineCtx{Context: parent, deadline: time.Now().Add(time.Hour)}
	if dl, ok := d.Deadline(); !ok || !dl.Equal(d.deadline) {
		t.Fatalf("Deadline = %v %v", dl, ok)
	}
	if d.Err() != nil {
		t.Fatalf("Err before the deadline = %v", d.Err())
	}
	cancel()
	if err := d.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after the parent's cancel = %v", err)
	}
	<-d.Done()
	d.release()

	// A parent with an earlier deadline wins.
	early, cancelEarly := context.WithDeadline(context.Background(), time.Now().Add(time.Minute))
	defer cancelEarly()
	d = &deadlineCtx{Context: early, deadline: time.Now().Add(time.Hour)}
	if dl, _ := d.Deadline(); dl.After(time.Now().Add(2 * time.Minute)) {
		t.Fatalf("Deadline %v ignores the parent's earlier one", dl)
	}
	d.release()
}
