package central_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vesta-go/vesta/api"
	"github.com/vesta-go/vesta/central"
	"github.com/vesta-go/vesta/central/wire"
	"github.com/vesta-go/vesta/core"
)

// frame joins bytes and strings (written as msgpack fixstr) into a frame.
func frame(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch p := p.(type) {
		case int:
			b = append(b, byte(p))
		case []byte:
			b = append(b, p...)
		case string:
			b = append(append(b, 0xa0|byte(len(p))), p...)
		}
	}
	return b
}

// request is [0, 9, proc, params] with params written by hand.
func request(proc string, params ...any) []byte {
	return frame(0x94, 0x00, 0x09, proc, frame(params...))
}

// TestBadRequests: each bad frame gets a coded error or a closed
// connection, and a well-behaved client beside it sees nothing.
func TestBadRequests(t *testing.T) {
	gen := newGen(t, core.Config{})
	_, addr := serve(t, gen, central.Config{MaxRequestBytes: 1024})
	good := dial(t, addr)
	good.genID()
	tests := []struct {
		name string
		in   []byte
		code api.Code // "" closes the connection
		msg  string
	}{
		{"count 0", request("Vesta.GenIDs", 0x91, 0x81, "count", 0x00), api.InvalidArgument, "count 0; want 1-10000"},
		{"count -1", request("Vesta.GenIDs", 0x91, 0x81, "count", 0xff), api.InvalidArgument, `count: "-1" is negative`},
		{"count int64 -1", request("Vesta.GenIDs", 0x91, 0x81, "count", 0xd3, bytes.Repeat([]byte{0xff}, 8)), api.InvalidArgument, `count: "-1" is negative`},
		{"count 10001", request("Vesta.GenIDs", 0x91, 0x81, "count", 0xcd, 0x27, 0x11), api.InvalidArgument, "count 10001; want 1-10000"},
		{"count 2^64-1", request("Vesta.GenIDs", 0x91, 0x81, "count", 0xcf, bytes.Repeat([]byte{0xff}, 8)), api.InvalidArgument, "count 18446744073709551615; want 1-10000"},
		{"count float", request("Vesta.GenIDs", 0x91, 0x81, "count", 0xcb, 0x40, 0x14, 0, 0, 0, 0, 0, 0), api.InvalidArgument, "count: want an unsigned integer, got float"},
		{"count a word", request("Vesta.GenIDs", 0x91, 0x81, "count", "five"), api.InvalidArgument, `count: "five" is not an unsigned decimal integer`},
		{"count nil", request("Vesta.GenIDs", 0x91, 0x81, "count", 0xc0), api.InvalidArgument, "missing field count (null)"},
		{"count missing", request("Vesta.GenIDs", 0x91, 0x80), api.InvalidArgument, "missing field count"},
		{"no params", request("Vesta.GenIDs", 0x90), api.InvalidArgument, "missing field count"},
		{"extra field", request("Vesta.GenIDs", 0x91, 0x82, "count", 0x01, "x", 0x01), api.InvalidArgument, `unknown field "x"`},
		{"field twice", request("Vesta.GenIDs", 0x91, 0x82, "count", 0x01, "count", 0x02), api.InvalidArgument, "given twice"},
		{"GenID with params", request("Vesta.GenID", 0x91, 0x81, "n", 0x01), api.InvalidArgument, "takes no params"},
		{"params of two", request("Vesta.GenIDs", 0x92, 0x81, "count", 0x01, 0x80), api.InvalidArgument, "params holds 2 elements"},
		{"params nil", request("Vesta.GenID", 0xc0), api.InvalidArgument, "params must be an array"},
		{"params a map", request("Vesta.GenIDs", 0x81, "count", 0x01), api.InvalidArgument, "params must be an array"},
		{"params positional", request("Vesta.GenIDs", 0x91, 0x05), api.InvalidArgument, "params[0] must be a map"},
		{"unknown method", request("Vesta.Foo", 0x90), api.InvalidArgument, `unknown method "Vesta.Foo"`},
		{"long unknown method", frame(0x94, 0x00, 0x09, 0xda, 0x03, 0x00, []byte(strings.Repeat("x", 768)), 0x90), api.InvalidArgument,
			`unknown method "` + strings.Repeat("x", wire.MaxProcedureLen) + `"`},
		{"method int", frame(0x94, 0x00, 0x09, 0x05, 0x90), api.InvalidArgument, "method must be a string"},
		{"three elements", frame(0x93, 0x00, 0x09, "Vesta.GenID"), api.InvalidArgument, "a request has 4 elements, not 3"},
		{"five elements", frame(0x95, 0x00, 0x09, "Vesta.GenID", 0x90, 0x90), api.InvalidArgument, "not 5"},
		{"ExpID id float", request("Vesta.ExpID", 0x91, 0x81, "id", 0xca, 0, 0, 0, 0), api.InvalidArgument, "id: want an unsigned integer, got float"},
		{"MakeID no seq", request("Vesta.MakeID", 0x91, 0x81, "time", 0x01), api.InvalidArgument, "missing field seq"},
		{"MakeID machine 1024", request("Vesta.MakeID", 0x91, 0x83, "time", 0x01, "seq", 0x01, "machine", 0xcd, 0x04, 0x00),
			api.InvalidArgument, "machine"},
		{"MakeID method -1", request("Vesta.MakeID", 0x91, 0x83, "time", 0x01, "seq", 0x01, "method", 0xff), api.InvalidArgument, `method: "-1" is negative`},
		{"TransTime no time", request("Vesta.TransTime", 0x90), api.InvalidArgument, "missing field time"},
		{"Info with params", request("Vesta.Info", 0x91, 0x81, "x", 0x01), api.InvalidArgument, "takes no params"},

		{"not an array", frame(0x05), "", ""},
		{"a map", frame(0x81, "a", 0x01), "", ""},
		{"empty array", frame(0x90), "", ""},
		{"type 1", frame(0x94, 0x01, 0x09, 0xc0, 0xc0), "", ""},
		{"type 7", frame(0x94, 0x07, 0x09, "Vesta.GenID", 0x90), "", ""},
		{"type string", frame(0x94, "0", 0x09, "Vesta.GenID", 0x90), "", ""},
		{"msgid -1", frame(0x94, 0x00, 0xff, "Vesta.GenID", 0x90), "", ""},
		{"msgid 2^32", frame(0x94, 0x00, 0xcf, 0, 0, 0, 1, 0, 0, 0, 0, "Vesta.GenID", 0x90), "", ""},
		{"msgid string", frame(0x94, 0x00, "9", "Vesta.GenID", 0x90), "", ""},
		{"msgid float", frame(0x94, 0x00, 0xca, 0, 0, 0, 0, "Vesta.GenID", 0x90), "", ""},
		{"bad notification", frame(0x92, 0x02, "Vesta.GenID"), "", ""},
		{"byte 0xc1", frame(0x94, 0x00, 0x09, 0xc1), "", ""},
		{"str32 claims 4 GiB", frame(0x94, 0x00, 0x09, 0xdb, 0xff, 0xff, 0xff, 0xff), "", ""},
		{"array32 claims 4G", frame(0xdd, 0xff, 0xff, 0xff, 0xff), "", ""},
		{"bin32 claims 1 GiB", request("Vesta.GenID", 0x91, 0x81, "k", 0xc6, 0x40, 0, 0, 0), "", ""},
		{"over MaxRequestBytes", frame(0x94, 0x00, 0x09, 0xda, 0x04, 0x00, []byte(strings.Repeat("x", 1024)), 0x90), "", ""},
		{"nested too deep", request("Vesta.GenID", bytes.Repeat([]byte{0x91}, 20), 0x01), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := dial(t, addr)
			p.write(tt.in)
			if tt.code == "" {
				p.closed()
			} else {
				resp := p.recv()
				if resp.MsgID != 9 || !refused(resp.Error, tt.code, tt.msg) {
					t.Fatalf("got %d %v; want %s with %q", resp.MsgID, resp.Error, tt.code, tt.msg)
				}
				p.genID() // the connection goes on
			}
			good.genID()
		})
	}
}

// TestGarbage writes random bytes on many connections at once; the server
// answers or closes each, and keeps serving.
func TestGarbage(t *testing.T) {
	gen := newGen(t, core.Config{})
	_, addr := serve(t, gen, central.Config{MaxRequestBytes: 4096})
	good := dial(t, addr)
	rng := rand.New(rand.NewPCG(1, 2))
	var wg sync.WaitGroup
	for i := range 40 {
		b := make([]byte, 1+rng.IntN(3000))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if i%2 == 0 { // half start like a request
			copy(b, request("Vesta.GenIDs", 0x91, 0x81, "count"))
		}
		nc, err := net.Dial("tcp", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer nc.Close()
			nc.Write(b)
			nc.(*net.TCPConn).CloseWrite()
			nc.SetReadDeadline(time.Now().Add(20 * time.Second))
			io.Copy(io.Discard, nc) // whatever comes, until the server closes
		})
		good.genID()
	}
	wg.Wait()
	good.genID()
}

// TestStalledFrame: a peer that sends half a frame and stalls, or trickles
// one byte at a time, is cut off after ReadTimeout.
func TestStalledFrame(t *testing.T) {
	gen := newGen(t, core.Config{})
	_, addr := serve(t, gen, central.Config{ReadTimeout: 100 * time.Millisecond})
	good := dial(t, addr)

	half := dial(t, addr)
	half.write([]byte{0x94, 0x00, 0x01, 0xab, 'V', 'e', 's'})
	half.closed()
	good.genID()

	trickle := dial(t, addr)
	req := []byte{0x94, 0x00, 0x01, 0xab, 'V', 'e', 's', 't', 'a', '.', 'G', 'e', 'n', 'I', 'D', 0x90}
	for _, c := range req { // 16 bytes, 40ms apart: far longer than ReadTimeout
		if _, err := trickle.nc.Write([]byte{c}); err != nil {
			break // cut off already
		}
		time.Sleep(40 * time.Millisecond)
	}
	trickle.closed()
	good.genID()
}

// TestIdle: a connection that sends nothing is closed after IdleTimeout,
// unless one of its calls is waiting for the generator.
func TestIdle(t *testing.T) {
	gen, clock := manualGen(t)
	_, addr := serve(t, gen, central.Config{IdleTimeout: 50 * time.Millisecond})
	idle := dial(t, addr)
	idle.closed()

	waiting := dial(t, addr)
	exhaust(t, gen)
	id := waiting.send(wire.ProcGenID, nil)
	time.Sleep(200 * time.Millisecond) // four idle timeouts
	clock.Advance(time.Millisecond)
	if resp := waiting.recv(); resp.MsgID != id || resp.Error != nil {
		t.Fatalf("%+v", resp)
	}
	waiting.closed() // idle again
}

// TestSlowReader: a peer that sends requests and never reads the answers is
// cut off after WriteTimeout.
func TestSlowReader(t *testing.T) {
	gen := newGen(t, core.Config{})
	_, addr := serve(t, gen, central.Config{WriteTimeout: 100 * time.Millisecond})
	good := dial(t, addr)
	slow := dial(t, addr)
	e := wire.NewEncoder()
	var batch []byte
	for range 1000 {
		batch, _ = e.AppendRequest(batch, 1, wire.ProcExpID, &wire.ExpIDParams{ID: 1 << 63})
	}
	wrote := make(chan struct{})
	go func() { // until the server stops reading, then closes
		defer close(wrote)
		for range 500 { // 500,000 answers of some 150 bytes: more than socket buffers hold
			if _, err := slow.nc.Write(batch); err != nil {
				return
			}
		}
	}()
	good.genID()
	<-wrote
	slow.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := io.Copy(io.Discard, slow.nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server never closed the connection")
	}
	good.genID()
}
