package integration_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// pipeline is a raw connection that keeps up to window calls in flight:
// a writer sends requests with msgids 1, 2, 3, ... in batches of up to
// eight per write, and a reader takes the answers in any order. Every
// tenth call is Vesta.GenIDs for 50 IDs, the others Vesta.GenID.
type pipeline struct {
	name    string
	nc      net.Conn
	window  chan struct{} // a token per call in flight
	written atomic.Uint32 // msgids up to this one were written whole
	done    chan struct{} // closed when the reader ended

	// The reader's, read once done is closed.
	answers map[uint32][]core.ID
	failed  []string // error answers and undecodable ones
	readErr error    // what ended the reading: io.EOF is an orderly close
}

const pipelineWindow = 64

func newPipeline(t testing.TB, name, addr string) *pipeline {
	nc, err := net.DialTimeout("tcp", addr, rawTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &pipeline{name: name, nc: nc, window: make(chan struct{}, pipelineWindow), done: make(chan struct{}),
		answers: map[uint32][]core.ID{}}
}

func batchCall(msgid uint32) bool { return msgid%10 == 0 }

// write sends calls until a write fails or the reader has ended.
func (p *pipeline) write() {
	enc := wire.NewEncoder()
	var buf []byte
	var ends []int // where each frame of buf ends
	for msgid := uint32(1); ; {
		k := 1 + int(msgid%8)
		for i := range k {
			select {
			case p.window <- struct{}{}:
			case <-p.done:
				return
			}
			var params any
			if batchCall(msgid + uint32(i)) {
				params = wire.GenIDsParams{Count: 50}
			}
			proc := wire.ProcGenID
			if params != nil {
				proc = wire.ProcGenIDs
			}
			buf, _ = enc.AppendRequest(buf, msgid+uint32(i), proc, params)
			ends = append(ends, len(buf))
		}
		n, err := p.nc.Write(buf)
		for i, end := range ends {
			if end <= n { // this frame reached the kernel whole
				p.written.Store(msgid + uint32(i))
			}
		}
		if err != nil {
			return
		}
		msgid += uint32(k)
		buf, ends = buf[:0], ends[:0]
	}
}

// read takes answers until the connection ends.
func (p *pipeline) read() {
	defer close(p.done)
	rd := wire.NewReader(p.nc, wire.MaxResponseBytes(50))
	for {
		frame, err := rd.Next()
		if err != nil {
			p.readErr = err
			return
		}
		resp, err := wire.DecodeResponse(frame)
		if _, dup := p.answers[resp.MsgID]; err == nil && dup {
			p.failed = append(p.failed, fmt.Sprintf("msgid %d answered twice", resp.MsgID))
		}
		switch {
		case err != nil:
			p.failed = append(p.failed, fmt.Sprintf("undecodable answer %x: %v", frame, err))
		case resp.Error != nil:
			p.failed = append(p.failed, fmt.Sprintf("msgid %d: %v", resp.MsgID, resp.Error))
		case batchCall(resp.MsgID):
			var ids []uint64
			if err := wire.DecodeResult(resp.Result, &ids); err != nil || len(ids) != 50 {
				p.failed = append(p.failed, fmt.Sprintf("msgid %d: %d IDs, %v", resp.MsgID, len(ids), err))
			}
			out := make([]core.ID, len(ids))
			for i, id := range ids {
				out[i] = core.ID(id)
			}
			p.answers[resp.MsgID] = out
		default:
			var id uint64
			if err := wire.DecodeResult(resp.Result, &id); err != nil {
				p.failed = append(p.failed, fmt.Sprintf("msgid %d: %v", resp.MsgID, err))
			}
			p.answers[resp.MsgID] = []core.ID{core.ID(id)}
		}
		select {
		case <-p.window:
		default:
			p.failed = append(p.failed, fmt.Sprintf("msgid %d: an answer to no call in flight", resp.MsgID))
		}
	}
}

// TestGracefulShutdown sends SIGTERM to a server while pipelined raw
// clients keep calls in flight. The server reads what was sent before the
// signal (and stops reading soon after), answers every request it has
// read, and closes each connection in order (a FIN after the last answer,
// not a reset). So on every connection the answered msgids are exactly
// 1..k with k at least the calls written before SIGTERM: no call sent
// before it is lost, and the unanswered ones are a tail the server never
// read. The exit is clean,
// and the final mark of the time guard is exact: the end of the last
// second any answer was issued in, so nothing was issued that was not
// answered. A restart continues above every answered ID.
func TestGracefulShutdown(t *testing.T) {
	led := newLedger(core.MaxPeak)
	p := serve(t, "vesta", serverEnv(t, nil, "", 0, "VESTA_MACHINE_ID", "1012"))
	pipes := make([]*pipeline, 6)
	var wg sync.WaitGroup
	for i := range pipes {
		pipes[i] = newPipeline(t, fmt.Sprintf("pipeline-%d", i+1), p.Central)
		wg.Go(pipes[i].read)
		wg.Go(pipes[i].write)
	}
	time.Sleep(time.Second)
	before := make([]uint32, len(pipes))
	for i, pp := range pipes {
		before[i] = pp.written.Load()
	}
	p.signal(syscall.SIGTERM)
	code := p.waitExit()
	wg.Wait()
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM; want 0", code)
	}
	if _, err := p.waitRecord(time.Second, msgIs("stopped")); err != nil {
		t.Error(err)
	}

	var answered, writtenTotal, beforeTotal int
	for i, pp := range pipes {
		if len(pp.failed) > 0 {
			t.Errorf("%s: %d bad answers; the first: %v", pp.name, len(pp.failed), pp.failed[:min(len(pp.failed), 5)])
		}
		if !errors.Is(pp.readErr, io.EOF) {
			t.Errorf("%s: the connection ended with %v; want an orderly close (EOF) after the last answer", pp.name, pp.readErr)
		}
		k := uint32(len(pp.answers))
		for msgid := uint32(1); msgid <= k; msgid++ {
			if _, ok := pp.answers[msgid]; !ok {
				t.Errorf("%s: %d answers, but none to msgid %d: a call the server read was dropped", pp.name, k, msgid)
				break
			}
		}
		w := pp.written.Load()
		if k > w {
			t.Errorf("%s: %d answers to %d calls written", pp.name, k, w)
		}
		if k < before[i] {
			t.Errorf("%s: %d answers, but %d calls were written before SIGTERM: the server must read what was sent before it stopped", pp.name, k, before[i])
		}
		s := led.stream(pp.name, false, core.Central)
		for msgid := uint32(1); msgid <= k; msgid++ {
			s.add(pp.answers[msgid]...)
		}
		t.Logf("%s: %d calls written (%d before SIGTERM), %d answered, %d never read by the server",
			pp.name, w, before[i], k, w-k)
		answered += int(k)
		writtenTotal += int(w)
		beforeTotal += int(before[i])
	}
	t.Logf("all: %d calls written (%d before SIGTERM), %d answered", writtenTotal, beforeTotal, answered)
	led.check(t)
	if t.Failed() {
		return
	}

	// The final mark is the end of the last second an answered ID was
	// issued in.
	_, hi := led.keyRange("")
	last := fields{typ: 0, time: hi[1012] >> 20}
	if mark, want := fileMark(t, p.env, 1012), last.instant().Add(time.Second).UnixMilli(); mark != want {
		t.Errorf("final mark %d; want %d, the end of the second of the last answered ID", mark, want)
	}

	again := p.again(t, "vesta-again")
	id, err := dialRaw(t, again.Central).genID()
	if err != nil {
		t.Fatal(err)
	}
	if f := decode(id); f.key() <= hi[1012] {
		t.Errorf("after the restart: %d %v; want above every ID answered before, up to (time %d, seq %d)",
			id, f, hi[1012]>>20, hi[1012]&(1<<20-1))
	}
	stopAll(t, again)
}
