package machineid

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/buildinfo"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// Member records: which process holds which lease, for an operator's view
// of the fleet (Lease.Fleet, GET /v1/fleet, the page).
//
// A member record is information only. Nothing reads it for a safety
// decision: who holds a machine ID is what the lease key says, and only
// that. Its writes never fail, fence or delay a claim or a renewal: a
// failed write is logged and the lease goes on. It is also not the fleet
// record (fleet.go): that one is one record per key prefix, written once
// and enforced; member records are one per held lease, rewritten at every
// renewal and only ever displayed.
//
// A record lives exactly as long as its lease: in Redis it is written with
// the lease key's remaining TTL (PTTL), in etcd it is attached to the same
// etcd lease, and Close removes it.

// Store names of Members.Store.
const (
	StoreRedis = ProviderRedis
	StoreEtcd  = ProviderEtcd
	// StoreNone: the machine ID is fixed (static, iptable, k8s); there is
	// no store to list a fleet from.
	StoreNone = "none"
)

// maxSkipNotes bounds the notes on records a listing skipped (then a
// count); the records themselves are bounded by leasestore.MaxMemberBytes
// and each field by leasestore's Max*Bytes, clipped when written and read.
const maxSkipNotes = 16

// Member is one process holding a machine ID under a key prefix, as its
// member record says (or, for this process, as it knows itself).
type Member struct {
	Machine core.MachineID
	// Self: this process.
	Self bool
	// State is "held" or "fenced" as the holder last wrote it (a record
	// exists only while its lease does); for Self, this lease's state now
	// ("none" for a fixed ID).
	State string
	// Provider gave the ID ("redis", "etcd", "static", ...); Range is
	// "server" or "embedded", the range it was taken from.
	Provider, Range string
	// Version is the holder's build (internal/buildinfo): "v1.2.3
	// (1a2b3c4d5e6f)".
	Version string
	// Host is the holder's host name, PID its process.
	Host string
	PID  int
	// RPC and HTTP are the listener addresses it advertised (Advertise);
	// "" when it serves none or has not said yet.
	RPC, HTTP string
	// Started is when the process took its first lease; Renewed when its
	// lease was last claimed or renewed (sent), Expires when the lease
	// expires unless renewed again, both on the holder's clock; zero for
	// a fixed ID.
	Started, Renewed, Expires time.Time
}

// Members is a listing of the fleet under one key prefix (Lease.Fleet).
type Members struct {
	// Store is StoreRedis, StoreEtcd or StoreNone.
	Store string
	// Prefix is the lease keys' prefix; "" for StoreNone.
	Prefix string
	// List is every member read, sorted by machine ID, this process's
	// own entry (Self) always there.
	List []Member
	// Skipped says which records in the store could not be read and why
	// (not JSON, too large, of another ID); at most a few notes.
	Skipped []string
}

// Listeners is what a lease advertises of its process (Advertise): the
// addresses it serves on, known only once it listens.
type Listeners struct {
	RPC  string // the central server's address; "" for none
	HTTP string // the REST server's address; "" for none
	// Host is the name the fleet view shows; "" is os.Hostname.
	Host string
}

// selfInfo is what this process says of itself in its member record, shared by
// every copy of a leaseBase.
type selfInfo struct {
	run     string // names this Lease among records of one machine ID
	started time.Time
	pid     int
	version string
	pod     string // POD_NAME, where the downward API sets it (history.go)

	ls atomic.Pointer[Listeners]
}

func newSelf(clock core.Clock) *selfInfo {
	host, _ := os.Hostname()
	s := &selfInfo{run: crand.Text()[:16], started: clock.Now(), pid: os.Getpid(), version: leasestore.Clip(buildinfo.Read().String(), leasestore.MaxTextBytes), pod: podName()}
	s.ls.Store(&Listeners{Host: leasestore.Clip(host, leasestore.MaxHostBytes)})
	return s
}

func (s *selfInfo) advertise(ls Listeners) {
	if ls.Host == "" {
		ls.Host, _ = os.Hostname()
	}
	s.ls.Store(&Listeners{RPC: leasestore.Clip(ls.RPC, leasestore.MaxAddrBytes), HTTP: leasestore.Clip(ls.HTTP, leasestore.MaxAddrBytes), Host: leasestore.Clip(ls.Host, leasestore.MaxHostBytes)})
}

func (s *selfInfo) listeners() Listeners { return *s.ls.Load() }

// Advertise sets the listener addresses (and host name) this process's
// member record shows, and for a lease in a store writes the record now.
// Call it once listening. A failed write is returned for the caller to
// log, and changes nothing else: the record is written again at the next
// renewal.
func (l *Lease) Advertise(ctx context.Context, ls Listeners) error {
	l.self.advertise(ls)
	return l.h.advertise(ctx)
}

// Fleet lists the member records under the lease's key prefix, read from
// the store, sorted by machine ID, with this process marked Self. For a
// fixed ID (static, iptable, k8s) it is this process alone, with Store
// StoreNone. When the store cannot be read, List is this process alone and
// the error says why. It is for display only.
func (l *Lease) Fleet(ctx context.Context) (Members, error) { return l.h.members(ctx) }

// selfMember is this process's own entry, from the lease's status st.
func (b leaseBase) selfMember(provider string, st Status, renewed time.Time, ttl time.Duration) Member {
	ls := b.self.listeners()
	m := Member{Machine: st.Machine, Self: true, State: st.State.String(), Provider: provider, Range: rangeName(b.method),
		Version: b.self.version, Host: ls.Host, PID: b.self.pid, RPC: ls.RPC, HTTP: ls.HTTP, Started: b.self.started.Round(0).UTC()}
	if !renewed.IsZero() {
		m.Renewed, m.Expires = renewed.Round(0).UTC(), renewed.Add(ttl).Round(0).UTC()
	}
	return m
}

// memberRecord is the stored form of a Member.
type memberRecord struct {
	Machine   int    `json:"machine"`
	Run       string `json:"run"`
	State     string `json:"state"`
	Provider  string `json:"provider"`
	Range     string `json:"range"`
	Version   string `json:"version"`
	Host      string `json:"host"`
	PID       int    `json:"pid"`
	RPC       string `json:"rpc,omitempty"`
	HTTP      string `json:"http,omitempty"`
	StartedMs int64  `json:"started_ms"`
	RenewedMs int64  `json:"renewed_ms"`
	ExpiresMs int64  `json:"expires_ms"`
}

func recordOf(m Member, run string) memberRecord {
	return memberRecord{Machine: int(m.Machine), Run: run, State: m.State, Provider: m.Provider, Range: m.Range,
		Version: m.Version, Host: m.Host, PID: m.PID, RPC: m.RPC, HTTP: m.HTTP,
		StartedMs: m.Started.UnixMilli(), RenewedMs: m.Renewed.UnixMilli(), ExpiresMs: m.Expires.UnixMilli()}
}

func (r memberRecord) encode() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// decodeMember reads a stored record of machine id, clipping every field.
func decodeMember(id core.MachineID, raw string) (Member, string, error) {
	if len(raw) > leasestore.MaxMemberBytes {
		return Member{}, "", fmt.Errorf("%d bytes or more, above %d: skipped unread", len(raw), leasestore.MaxMemberBytes)
	}
	var r memberRecord
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return Member{}, "", fmt.Errorf("not a member record: %v", err)
	}
	if r.Machine != int(id) {
		return Member{}, "", fmt.Errorf("names machine %d, not %d", r.Machine, id)
	}
	state := "held"
	if r.State == StateFenced.String() {
		state = r.State
	}
	return Member{Machine: id, State: state, Provider: leasestore.Clip(r.Provider, leasestore.MaxTextBytes), Range: leasestore.Clip(r.Range, leasestore.MaxTextBytes),
		Version: leasestore.Clip(r.Version, leasestore.MaxTextBytes), Host: leasestore.Clip(r.Host, leasestore.MaxHostBytes), PID: max(r.PID, 0),
		RPC: leasestore.Clip(r.RPC, leasestore.MaxAddrBytes), HTTP: leasestore.Clip(r.HTTP, leasestore.MaxAddrBytes),
		Started: msTime(r.StartedMs), Renewed: msTime(r.RenewedMs), Expires: msTime(r.ExpiresMs)}, leasestore.Clip(r.Run, leasestore.MaxTextBytes), nil
}

// msTime is a record's instant; zero when absent or out of any sane range
// (before 2000 or after 3000).
func msTime(ms int64) time.Time {
	if ms < 946684800000 || ms > 32503680000000 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// listMembers builds the listing from what a store read: self is this
// process's own entry, run its record's name (its own record is replaced
// by self, which is current).
func listMembers(store, prefix string, me Member, run string, raws []leasestore.RawMember) Members {
	out := Members{Store: store, Prefix: prefix, List: []Member{me}}
	skipped := 0
	note := func(format string, args ...any) {
		skipped++
		if len(out.Skipped) < maxSkipNotes {
			out.Skipped = append(out.Skipped, fmt.Sprintf(format, args...))
		}
	}
	for _, r := range raws {
		if r.Skip != "" {
			note("%s: %s", r.Key, r.Skip)
			continue
		}
		m, rrun, err := decodeMember(r.ID, r.Value)
		switch {
		case err != nil:
			note("%s: %v", r.Key, err)
		case rrun != run || r.ID != me.Machine:
			out.List = append(out.List, m)
		}
	}
	if skipped > len(out.Skipped) {
		out.Skipped = append(out.Skipped, fmt.Sprintf("and %d more", skipped-len(out.Skipped)))
	}
	slices.SortStableFunc(out.List, func(a, b Member) int {
		if c := cmp.Compare(a.Machine, b.Machine); c != 0 {
			return c
		}
		switch {
		case a.Self:
			return -1
		case b.Self:
			return 1
		}
		return 0
	})
	return out
}

// refreshMember has the member writer write the record soon.
func (l *leased) refreshMember() {
	select {
	case l.memberKick <- struct{}{}:
	default:
	}
}

// memberWriter writes the member record when asked (after each claim and
// renewal), apart from the renewer: a slow store delays the record, never
// a renewal.
func (l *leased) memberWriter() {
	defer l.wg.Done()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-l.memberKick:
			l.writeMember(l.ctx)
			l.writeHistory(l.ctx) // historylease.go
		}
	}
}

// writeMember writes the current hold's member record, bounded by the
// store's command timeout. A failure is logged (once per kind) and
// changes nothing else: the record is information only.
func (l *leased) writeMember(ctx context.Context) error {
	l.memberMu.Lock()
	defer l.memberMu.Unlock()
	l.mu.Lock()
	h := l.hold
	if h == nil || l.closed {
		l.mu.Unlock()
		return nil
	}
	rec := recordOf(l.selfMember(l.provider, l.statusLocked(), l.renewed, l.ttl), l.self.run)
	l.mu.Unlock()
	ctx, cancel := leasestore.Bounded(ctx, l.ttl)
	defer cancel()
	err := l.st.PutMember(ctx, h, rec.encode())
	l.noteWrite(&l.memberErr, "the member record", h.ID, err)
	return err
}

// noteWrite logs the outcome of a write of what (a record that is
// information only) for machine id: a failure once while it fails alike,
// and the first success after one. last is the failure last logged ("":
// none), kept under the lock that orders those writes.
func (l *leased) noteWrite(last *string, what string, id core.MachineID, err error) {
	switch {
	case err != nil && err.Error() != *last:
		l.log.Warn("machineid: writing "+what+" failed (it is information only; the lease goes on)", "machine", id, "err", err)
		*last = err.Error()
	case err == nil && *last != "":
		l.log.Info("machineid: "+what+" is written again", "machine", id)
		*last = ""
	}
}

// dropMember deletes h's member record while h still holds its lease, so
// that a closed lease leaves the listing at once.
func (l *leased) dropMember(ctx context.Context, h *leasestore.Hold) {
	l.memberMu.Lock()
	defer l.memberMu.Unlock()
	ctx, cancel := leasestore.Bounded(ctx, l.ttl)
	defer cancel()
	if err := l.st.DropMember(ctx, h); err != nil {
		l.log.Warn("machineid: deleting the member record failed; it expires with the lease", "machine", h.ID, "ttl", l.ttl, "err", err)
	}
}

func (l *leased) advertise(ctx context.Context) error { return l.writeMember(ctx) }

// members reads the store's member records, with this process's own entry
// current.
func (l *leased) members(ctx context.Context) (Members, error) {
	l.mu.Lock()
	me := l.selfMember(l.provider, l.statusLocked(), l.renewed, l.ttl)
	if l.hold == nil {
		me.Renewed, me.Expires = time.Time{}, time.Time{}
	}
	l.mu.Unlock()
	ctx, cancel := leasestore.Bounded(ctx, l.ttl)
	defer cancel()
	raws, err := l.st.Members(ctx)
	if err != nil {
		return Members{Store: l.provider, Prefix: l.st.Prefix(), List: []Member{me}}, err
	}
	return listMembers(l.provider, l.st.Prefix(), me, l.self.run, raws), nil
}
