package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vesta-go/vesta/client"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/embed"
	"github.com/vesta-go/vesta/machineid"
	"github.com/vesta-go/vesta/nemesis/ledger"
)

// The client process: a child of the nemesis in the load host's
// namespace running a Go client over every server (prefetching, falling
// back on a fixed machine ID of its own) and an embedded issuer on
// another fixed machine ID, each with a data dir that outlives the
// process. kill -9 and restart of it try what a crashed application
// leaves: the embedded generators' time guards on restart.
//
// It writes every answer to stdout as a frame, little-endian:
//
//	stream uint8 (0 client, 1 embedded) | ok uint8 | n uint16 | n × uint64
//
// and the nemesis records each as it arrives, as any other caller's.
const (
	streamClient   = 0
	streamEmbedded = 1
	childFallback  = 12
	childEmbedded  = 22
)

// childMain is `vesta-nemesis client`: the client process itself.
func childMain(args []string) int {
	fs := flag.NewFlagSet("vesta-nemesis client", flag.ContinueOnError)
	centrals := fs.String("centrals", "", "central servers, comma-separated")
	data := fs.String("data", "", "data directory kept across runs")
	rate := fs.Float64("rate", 1000, "IDs per second, both streams")
	clockFile := fs.String("clock", "", "a file holding the clock's offset (a Go duration), read every 50ms")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log.SetPrefix("nemesis client: ")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	out := &frames{w: bufio.NewWriter(os.Stdout)}
	// Both issuers run on one clock the nemesis steps, as a host's.
	clk := core.NewOffsetClock(core.NewSystemClock())
	if *clockFile != "" {
		go followClock(ctx, clk, *clockFile)
	}

	cfg := client.DefaultConfig(strings.Split(*centrals, ",")...)
	cfg.Prefetch = 256
	cfg.Timeout = time.Second
	cfg.FallbackConfig = staticConfig(filepath.Join(*data, "fallback"), childFallback, clk) // the fallback is on by default
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	c, err := client.New(octx, cfg)
	cancel()
	if err != nil {
		log.Printf("client: %v", err)
		return 1
	}
	defer c.Close()
	is, err := embed.Open(ctx, staticConfig(filepath.Join(*data, "embedded"), childEmbedded, clk))
	if err != nil {
		log.Printf("embedded: %v", err)
		return 1
	}
	defer is.Close()
	log.Printf("started: client over %s (fallback %d), embedded %d", *centrals, childFallback, childEmbedded)

	var wg sync.WaitGroup
	run := func(stream uint8, r float64, batch int, next func(ctx context.Context, n int) ([]core.ID, error)) {
		defer wg.Done()
		start := time.Now()
		var done int64
		for pace(ctx, start, done, r) {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			ids, err := next(cctx, batch)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if werr := out.write(stream, ids, err); werr != nil {
				stop() // the nemesis is gone
				return
			}
			if err != nil {
				done += int64(batch)
				time.Sleep(20 * time.Millisecond)
				continue
			}
			done += int64(len(ids))
		}
	}
	wg.Add(2)
	go run(streamClient, *rate*2/3, 10, c.NextIDs)
	go run(streamEmbedded, *rate/3, 50, is.NextIDs)
	wg.Wait()
	return 0
}

// followClock applies the offset in file to clk every 50ms (the clock
// fault's step), keeping the last one while the file does not read.
func followClock(ctx context.Context, clk *core.OffsetClock, file string) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if b, err := os.ReadFile(file); err == nil {
			if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil {
				if old := clk.SetShift(d); old != d {
					log.Printf("clock offset now %v", d)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// frames writes answers to the nemesis, one frame each, flushed at once:
// what is written is handed out.
type frames struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (f *frames) write(stream uint8, ids []core.ID, err error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ok := uint8(1)
	if err != nil {
		ok, ids = 0, nil
	}
	hdr := [4]byte{stream, ok}
	binary.LittleEndian.PutUint16(hdr[2:], uint16(len(ids)))
	f.w.Write(hdr[:])
	var b [8]byte
	for _, id := range ids {
		binary.LittleEndian.PutUint64(b[:], uint64(id))
		f.w.Write(b[:])
	}
	return f.w.Flush()
}

// readFrame reads one frame.
func readFrame(r io.Reader) (stream uint8, ok bool, vs []uint64, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, false, nil, err
	}
	n := int(binary.LittleEndian.Uint16(hdr[2:]))
	buf := make([]byte, 8*n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, false, nil, err
	}
	vs = make([]uint64, n)
	for i := range vs {
		vs[i] = binary.LittleEndian.Uint64(buf[8*i:])
	}
	return hdr[0], hdr[1] == 1, vs, nil
}

// clientProc runs the client process for the nemesis, restartable, and
// records what it answers.
type clientProc struct {
	w       *workload
	argv    []string
	logf    *os.File
	clock   string // the file of its clock's offset
	callers [2]*caller
	writers [2]*ledger.Writer
	ctrs    [2]*counters

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	runs   int
	killed bool // the nemesis killed the current run: its last frame may be cut
}

func (w *workload) startClientProc(centrals []string, servers []*server) (*clientProc, error) {
	t := w.f.t
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	logf, err := os.Create(filepath.Join(dir, "client.log"))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { logf.Close() })
	clock := filepath.Join(dir, "clock")
	if err := os.WriteFile(clock, []byte("0s\n"), 0o644); err != nil {
		return nil, err
	}
	rate := 0.1 * float64(w.rate)
	p := &clientProc{w: w, logf: logf, clock: clock,
		argv: append(w.f.load.Wrap(), exe, "client", "--centrals", strings.Join(centrals, ","), "--data", dir, "--rate", fmt.Sprint(rate), "--clock", clock)}
	p.callers[streamClient] = w.caller(fmt.Sprintf("client process via all (fallback %d)", childFallback), "client-process", union(servers, childFallback))
	p.callers[streamEmbedded] = w.caller(fmt.Sprintf("embedded in the client process (machine %d)", childEmbedded), "embedded-process",
		func() map[int]bool { return map[int]bool{childEmbedded: true} })
	for i, c := range p.callers {
		p.writers[i] = w.led.Writer(w.led.Source(c.name))
		p.ctrs[i] = w.m.kind(c.kind)
	}
	w.closer = append(w.closer, func() {
		p.stop()
		for i, wr := range p.writers {
			if err := wr.Flush(); err != nil {
				w.fail("ledger: flushing %s: %v", p.callers[i].name, err)
			}
		}
	})
	return p, p.start()
}

func (p *clientProc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Stderr = p.logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("client process: %w", err)
	}
	p.runs++
	fmt.Fprintf(p.logf, "=== run %d, pid %d, %s\n", p.runs, cmd.Process.Pid, time.Now().UTC().Format(time.RFC3339Nano))
	p.cmd, p.exited, p.killed = cmd, make(chan struct{}), false
	go p.read(cmd, stdout, p.exited)
	return nil
}

// read records every frame until the run ends; it alone writes the
// ledger's client-process sources (kill waits for it). A frame that does
// not read fails the run, but one cut short by the nemesis's own kill -9.
func (p *clientProc) read(cmd *exec.Cmd, r io.Reader, exited chan struct{}) {
	defer close(exited)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		stream, ok, vs, err := readFrame(br)
		if err != nil {
			cmd.Wait()
			p.mu.Lock()
			killed := p.killed
			p.mu.Unlock()
			if !errors.Is(err, io.EOF) && !(errors.Is(err, io.ErrUnexpectedEOF) && killed) {
				p.w.fail("client process: reading its frames: %v", err)
			}
			return
		}
		if stream > streamEmbedded {
			p.w.fail("client process: a frame of stream %d", stream)
			cmd.Process.Kill()
			cmd.Wait()
			return
		}
		at := time.Now()
		if !ok {
			p.w.m.add(p.ctrs[stream], at, 0, errors.New("error"))
			continue
		}
		p.w.m.add(p.ctrs[stream], at, len(vs), nil)
		ids := make([]core.ID, len(vs))
		for i, v := range vs {
			ids[i] = core.ID(v)
		}
		p.callers[stream].sawIDs(ids)
		if err := p.writers[stream].Add(ledger.IDs, at, vs...); err != nil {
			p.w.fail("ledger: recording %d values of %s: %v", len(vs), p.callers[stream].name, err)
		}
	}
}

func (p *clientProc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return notClosed(p.exited)
}

func (p *clientProc) end(sig syscall.Signal, wait time.Duration) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.killed = true
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(wait):
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// kill is kill -9; it returns when every frame written is recorded.
func (p *clientProc) kill() { p.end(syscall.SIGKILL, 10*time.Second) }

func (p *clientProc) stop() { p.end(syscall.SIGTERM, 5*time.Second) }

// staticConfig is an embedded issuer's configuration on machine id, with
// its data under dir and clk for its clock (nil: the system's); the
// nemesis's own embedded issuers and fallbacks take it too.
func staticConfig(dir string, id core.MachineID, clk core.Clock) embed.Config {
	cfg := embed.DefaultConfig()
	cfg.DataDir = dir
	cfg.Machine.Providers = []string{machineid.ProviderStatic}
	cfg.Machine.Static = &id
	cfg.Clock = clk
	return cfg
}
