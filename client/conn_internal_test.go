package client

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
)

// pipeConn is a conn on one end of net.Pipe with its goroutines running,
// and a fake server on the other end: it answers Vesta.GenID with the
// msgid and never answers anything else.
func pipeConn(t testing.TB, grace time.Duration) *conn {
	t.Helper()
	cli, srv := net.Pipe()
	cn := newConn(cli, "pipe", grace)
	var wg sync.WaitGroup
	wg.Go(cn.writeLoop)
	wg.Go(cn.watchLoop)
	wg.Go(cn.readLoop)
	pipeServer(&wg, srv, func(req wire.Request, err error) []byte {
		if err != nil || req.Procedure != wire.ProcGenID {
			return nil
		}
		return wire.AppendIDResponse(nil, req.MsgID, uint64(req.MsgID))
	})
	t.Cleanup(func() {
		cn.close(ErrClosed)
		srv.Close()
		wg.Wait()
	})
	return cn
}

// pipeServer is a fake server on srv, run in wg until srv closes: it
// writes answer's frame for each request (with the request's decoding
// error), nothing for nil.
func pipeServer(wg *sync.WaitGroup, srv net.Conn, answer func(wire.Request, error) []byte) {
	wg.Go(func() {
		r := wire.NewReader(srv, 1<<20)
		for {
			frame, err := r.Next()
			if err != nil {
				return
			}
			out := answer(wire.DecodeRequest(frame))
			if out == nil {
				continue
			}
			if _, err := srv.Write(out); err != nil {
				return
			}
		}
	})
}

// inFlight is how many calls the watchdog still looks at.
func (cn *conn) inFlight() int {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return len(cn.order) - cn.head
}

// A call queued behind one with a later deadline still expires at its
// own: the watchdog looks at every call in flight, not only the oldest.
// Nothing was read meanwhile, so the connection closes as silent and the
// other call fails at once, with errSilent.
func TestWatchdogExpiresOutOfOrder(t *testing.T) {
	cn := pipeConn(t, time.Millisecond)
	long := make(chan error, 1)
	go func() {
		var v uint64
		long <- cn.invoke(context.Background(), time.Now().Add(time.Hour), wire.ProcNextSeq, wire.NextSeqParams{Tag: "a"}, &v)
	}()
	waittest.Until(t, "the call in flight", func() bool { return cn.inFlight() > 0 })
	short := make(chan error, 1)
	go func() {
		var v uint64
		short <- cn.invoke(context.Background(), time.Now().Add(20*time.Millisecond), wire.ProcNextSeq, wire.NextSeqParams{Tag: "b"}, &v)
	}()
	select {
	case err := <-short:
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("the short call: %v; want ErrTimeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the short call did not expire: it waits behind the long one")
	}
	select {
	case err := <-long:
		if !errors.Is(err, ErrConnection) || !errors.Is(err, errSilent) {
			t.Errorf("the long call: %v; want ErrConnection for a silent connection", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the long call still waits on a connection closed as silent")
	}
	if cn.alive() {
		t.Error("the connection stays alive though nothing was read past a deadline")
	}
}

// A call that expires while replies to others are read fails alone: the
// connection is not silent and stays. Answered calls leave the watchdog's
// list as they are answered, and a caller that gives up leaves the
// connection as it was.
func TestWatchdogNotSilent(t *testing.T) {
	cn := pipeConn(t, time.Millisecond)
	ctx := context.Background()
	stuck := make(chan error, 1)
	go func() {
		var v uint64
		stuck <- cn.invoke(ctx, time.Now().Add(50*time.Millisecond), wire.ProcNextSeq, wire.NextSeqParams{Tag: "x"}, &v)
	}()
	var calls sync.WaitGroup
	for w := range 8 {
		calls.Go(func() {
			for i := 0; ; i++ {
				var id uint64
				if err := cn.invoke(ctx, time.Now().Add(time.Hour), wire.ProcGenID, nil, &id); err != nil {
					t.Errorf("caller %d, call %d: %v", w, i, err)
					return
				}
				select {
				case err := <-stuck:
					stuck <- err
					return
				default:
				}
			}
		})
	}
	calls.Wait()
	if err := <-stuck; !errors.Is(err, ErrTimeout) {
		t.Fatalf("the unanswered call: %v; want ErrTimeout", err)
	}
	if !cn.alive() {
		t.Fatal("the connection closed though replies were read past the deadline")
	}
	if n := cn.inFlight(); n != 0 {
		t.Errorf("%d calls left in the watchdog's list after all were settled", n)
	}

	gone, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		var v uint64
		done <- cn.invoke(gone, time.Now().Add(time.Hour), wire.ProcNextSeq, wire.NextSeqParams{Tag: "y"}, &v)
	}()
	waittest.Until(t, "the call in flight", func() bool { return cn.inFlight() > 0 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller that gave up: %v; want context.Canceled", err)
	}
	var id uint64
	if err := cn.invoke(ctx, time.Now().Add(time.Hour), wire.ProcGenID, nil, &id); err != nil || !cn.alive() {
		t.Fatalf("after a caller gave up: %v (alive %v); want the connection as it was", err, cn.alive())
	}
}

// A group that expires before the writer took it (the client's process
// paused past a call's timeout) is closed to riders: a later single call
// opens a group of its own and gets its ID, and the expired one is never
// sent.
func TestGroupExpiredBeforeSent(t *testing.T) {
	cli, srv := net.Pipe()
	cn := newConn(cli, "pipe", 0)
	cn.info = identity{maxBatch: 10, takeIDs: true, singles: true}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cn.close(ErrClosed)
		srv.Close()
		wg.Wait()
	})
	first := make(chan error, 1)
	go func() {
		_, _, err := cn.single(context.Background(), time.Millisecond)
		first <- err
	}()
	waittest.Until(t, "the group queued", func() bool { // the writer does not run yet
		cn.mu.Lock()
		defer cn.mu.Unlock()
		return cn.group != nil
	})
	cn.reads.Add(1) // something was read meanwhile: not a silent connection, which expire would close
	cn.expire(time.Now().Add(time.Second).UnixNano())
	if err := <-first; !errors.Is(err, ErrTimeout) {
		t.Fatalf("the expired group's rider: %v; want ErrTimeout", err)
	}
	var sent []wire.TakeIDsParams
	var mu sync.Mutex
	pipeServer(&wg, srv, func(req wire.Request, err error) []byte { // answers each TakeIDs with count IDs
		var p wire.TakeIDsParams
		if err != nil || wire.DecodeParams(req.Params, &p) != nil {
			t.Errorf("a request the server cannot read: %v", err)
			return nil
		}
		mu.Lock()
		sent = append(sent, p)
		mu.Unlock()
		ids := make([]core.ID, p.Count)
		for i := range ids {
			ids[i] = core.ID(1000 + i)
		}
		return wire.AppendTakeIDsResponse(nil, req.MsgID, ids, 0)
	})
	wg.Go(cn.writeLoop)
	wg.Go(cn.watchLoop)
	wg.Go(cn.readLoop)
	id, retry, err := cn.single(context.Background(), 5*time.Second)
	if err != nil || retry != 0 || id != 1000 {
		t.Fatalf("a single call after the expired group: %d, %v, %v; want 1000", id, retry, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 1 || sent[0] != (wire.TakeIDsParams{Count: 1, Singles: 1}) {
		t.Fatalf("the server read %+v; want one TakeIDs {count 1, singles 1}", sent)
	}
}
