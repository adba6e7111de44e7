package machineid

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vesta-go/vesta/machineid/internal/etcdstore"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// etcdModel is an etcd cluster in memory, for the lease simulation, below
// clientv3's KV, Lease and Watcher interfaces, so that etcd.go runs as it
// does against a real cluster: its transactions (compares of create
// revisions and values, nested transactions), leases and keys attached to
// them, linearizable reads and watches from a revision. It is one
// linearizable state machine, as Raft makes a cluster look. What the model
// adds is what the lease must survive:
//
//   - leases expire on the leader's monotonic clock (the true time here),
//     and a new leader renews every lease to its full TTL (etcd does not
//     checkpoint what is left by default);
//   - without a quorum nothing commits and no lease expires; requests wait
//     until their deadline;
//   - each request and watch event crosses the simulated network
//     (simProc.roundTrip).
//
// Modelling at this level rather than the store interface keeps etcd.go's
// own logic (which revision names a hold, what a renewal's read proves,
// the nested mark transaction) under test; modelling below it, at the
// gRPC streams, would add clientv3's goroutines and retries to every
// schedule for no decision of the lease's.
type etcdModel struct {
	w *simWorld

	mu     sync.Mutex
	rev    int64
	kvs    map[string]*mvccpb.KeyValue
	leases map[clientv3.LeaseID]*etcdLease
	nextID clientv3.LeaseID
	events []*mvccpb.Event          // every event, in revision order
	notify map[string]chan struct{} // per key, closed at its next event
	kick   chan struct{}            // wakes the expirer
	done   chan struct{}
	wg     sync.WaitGroup
}

type etcdLease struct {
	ttl    time.Duration
	expiry time.Duration // true time
	keys   map[string]bool
}

func newEtcdModel(w *simWorld) *etcdModel {
	m := &etcdModel{w: w, rev: 1, kvs: map[string]*mvccpb.KeyValue{}, leases: map[clientv3.LeaseID]*etcdLease{},
		nextID: 0x7000, notify: map[string]chan struct{}{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	m.wg.Go(m.expirer)
	return m
}

func (m *etcdModel) close() {
	close(m.done)
	m.wg.Wait()
}

// expirer revokes leases at their expiry, while there is a quorum.
func (m *etcdModel) expirer() {
	for {
		m.mu.Lock()
		now := m.w.now()
		next := time.Duration(-1)
		if !m.w.quorumLost(now) {
			for id, l := range m.leases {
				if l.expiry <= now {
					m.revokeLocked(id)
				} else if next < 0 || l.expiry < next {
					next = l.expiry
				}
			}
		} else {
			for _, d := range m.w.noQuorum {
				if d.has(now) {
					next = d.to
				}
			}
		}
		m.mu.Unlock()
		var fire <-chan time.Time
		if next >= 0 {
			fire = time.After(next - now)
		}
		select {
		case <-m.done:
			return
		case <-m.kick:
		case <-fire:
		}
	}
}

func (m *etcdModel) poke() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// newLeader renews every lease to its full TTL, as a newly elected
// leader's lessor does.
func (m *etcdModel) newLeader() {
	m.mu.Lock()
	now := m.w.now()
	for _, l := range m.leases {
		l.expiry = now + l.ttl
	}
	m.mu.Unlock()
	m.poke()
}

// event records ev and wakes the watches of its key.
func (m *etcdModel) eventLocked(ev *mvccpb.Event) {
	m.events = append(m.events, ev)
	if ch, ok := m.notify[string(ev.Kv.Key)]; ok {
		close(ch)
		delete(m.notify, string(ev.Kv.Key))
	}
}

// notifyLocked is closed at key's next event.
func (m *etcdModel) notifyLocked(key string) <-chan struct{} {
	ch, ok := m.notify[key]
	if !ok {
		ch = make(chan struct{})
		m.notify[key] = ch
	}
	return ch
}

func (m *etcdModel) putLocked(key, val []byte, lease clientv3.LeaseID, rev int64) {
	kv := m.kvs[string(key)]
	nkv := &mvccpb.KeyValue{Key: key, Value: val, CreateRevision: rev, ModRevision: rev, Version: 1, Lease: int64(lease)}
	if kv != nil {
		nkv.CreateRevision, nkv.Version = kv.CreateRevision, kv.Version+1
		if old := m.leases[clientv3.LeaseID(kv.Lease)]; old != nil {
			delete(old.keys, string(key))
		}
	}
	if l := m.leases[lease]; l != nil {
		l.keys[string(key)] = true
	}
	m.kvs[string(key)] = nkv
	m.eventLocked(&mvccpb.Event{Type: mvccpb.PUT, Kv: nkv})
}

func (m *etcdModel) deleteLocked(key string, rev int64) int64 {
	kv := m.kvs[key]
	if kv == nil {
		return 0
	}
	delete(m.kvs, key)
	if l := m.leases[clientv3.LeaseID(kv.Lease)]; l != nil {
		delete(l.keys, key)
	}
	m.eventLocked(&mvccpb.Event{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: rev}})
	return 1
}

func (m *etcdModel) revokeLocked(id clientv3.LeaseID) {
	l := m.leases[id]
	delete(m.leases, id)
	if len(l.keys) == 0 {
		return
	}
	m.rev++
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range l.keys {
			if !yield(k) {
				return
			}
		}
	}) {
		m.deleteLocked(k, m.rev)
	}
}

func (m *etcdModel) header() *etcdserverpb.ResponseHeader {
	return &etcdserverpb.ResponseHeader{Revision: m.rev}
}

// rangeLocked reads key (to end when set, at most limit).
func (m *etcdModel) rangeLocked(key, end []byte, limit int64) *etcdserverpb.RangeResponse {
	r := &etcdserverpb.RangeResponse{Header: m.header()}
	if len(end) == 0 {
		if kv := m.kvs[string(key)]; kv != nil {
			r.Kvs, r.Count = []*mvccpb.KeyValue{kv}, 1
		}
		return r
	}
	var keys []string
	for k := range m.kvs {
		if k >= string(key) && k < string(end) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	r.Count = int64(len(keys))
	if limit > 0 && int64(len(keys)) > limit {
		keys, r.More = keys[:limit], true
	}
	for _, k := range keys {
		r.Kvs = append(r.Kvs, m.kvs[k])
	}
	return r
}

// compare is etcd's applyCompare: a value compare on a missing key fails.
func (m *etcdModel) compare(c clientv3.Cmp) bool {
	pc := c.GetCompare()
	kv := m.kvs[string(pc.Key)]
	if kv == nil {
		if pc.Target == etcdserverpb.Compare_VALUE {
			return false
		}
		kv = &mvccpb.KeyValue{}
	}
	var r int
	switch pc.Target {
	case etcdserverpb.Compare_VALUE:
		r = bytes.Compare(kv.Value, pc.GetValue())
	case etcdserverpb.Compare_CREATE:
		r = cmp.Compare(kv.CreateRevision, pc.GetCreateRevision())
	case etcdserverpb.Compare_MOD:
		r = cmp.Compare(kv.ModRevision, pc.GetModRevision())
	case etcdserverpb.Compare_VERSION:
		r = cmp.Compare(kv.Version, pc.GetVersion())
	case etcdserverpb.Compare_LEASE:
		r = cmp.Compare(kv.Lease, pc.GetLease())
	}
	switch pc.Result {
	case etcdserverpb.Compare_EQUAL:
		return r == 0
	case etcdserverpb.Compare_NOT_EQUAL:
		return r != 0
	case etcdserverpb.Compare_GREATER:
		return r > 0
	}
	return r < 0
}

// opLease is the etcd lease a put attaches its key to: clientv3 keeps it
// unexported.
func opLease(op clientv3.Op) clientv3.LeaseID {
	return clientv3.LeaseID(reflect.ValueOf(op).FieldByName("leaseID").Int())
}

// checkLeases fails a transaction whose puts name a lease that does not
// exist, before anything is applied, as etcd does.
func (m *etcdModel) checkLeases(cmps []clientv3.Cmp, then, els []clientv3.Op) error {
	ops := then
	if !m.allHold(cmps) {
		ops = els
	}
	for _, op := range ops {
		switch {
		case op.IsPut():
			if id := opLease(op); id != 0 && m.leases[id] == nil {
				return rpctypes.ErrLeaseNotFound
			}
		case op.IsTxn():
			if err := m.checkLeases(op.Txn()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *etcdModel) allHold(cmps []clientv3.Cmp) bool {
	for _, c := range cmps {
		if !m.compare(c) {
			return false
		}
	}
	return true
}

// writes says whether ops (taken at the branch they take) write.
func (m *etcdModel) writes(cmps []clientv3.Cmp, then, els []clientv3.Op) bool {
	ops := then
	if !m.allHold(cmps) {
		ops = els
	}
	for _, op := range ops {
		if op.IsPut() || op.IsDelete() || (op.IsTxn() && m.writes(op.Txn())) {
			return true
		}
	}
	return false
}

// txnLocked runs a transaction at revision rev (the next one when it
// writes).
func (m *etcdModel) txnLocked(cmps []clientv3.Cmp, then, els []clientv3.Op, rev int64) *etcdserverpb.TxnResponse {
	ok := m.allHold(cmps)
	ops := then
	if !ok {
		ops = els
	}
	r := &etcdserverpb.TxnResponse{Succeeded: ok}
	for _, op := range ops {
		var ro etcdserverpb.ResponseOp
		switch {
		case op.IsGet():
			ro.Response = &etcdserverpb.ResponseOp_ResponseRange{ResponseRange: m.rangeLocked(op.KeyBytes(), op.RangeBytes(), op.Limit())}
		case op.IsPut():
			m.putLocked(op.KeyBytes(), op.ValueBytes(), opLease(op), rev)
			ro.Response = &etcdserverpb.ResponseOp_ResponsePut{ResponsePut: &etcdserverpb.PutResponse{}}
		case op.IsDelete():
			n := m.deleteLocked(string(op.KeyBytes()), rev)
			ro.Response = &etcdserverpb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: &etcdserverpb.DeleteRangeResponse{Deleted: n}}
		case op.IsTxn():
			c, t, e := op.Txn()
			ro.Response = &etcdserverpb.ResponseOp_ResponseTxn{ResponseTxn: m.txnLocked(c, t, e, rev)}
		}
		r.Responses = append(r.Responses, &ro)
	}
	return r
}

// commit runs a whole transaction.
func (m *etcdModel) commit(cmps []clientv3.Cmp, then, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLeases(cmps, then, els); err != nil {
		return nil, err
	}
	rev := m.rev
	if m.writes(cmps, then, els) {
		m.rev++
		rev = m.rev
	}
	r := m.txnLocked(cmps, then, els, rev)
	r.Header = m.header()
	return (*clientv3.TxnResponse)(r), nil
}

// store is the etcdStore of process p: the real one, on a client whose
// KV, Lease and Watcher are this model behind p's network.
func (m *etcdModel) store(p *simProc, b leaseBase) leasestore.Store {
	c := &etcdConn{m: m, p: p, ttl: b.cfg.Etcd.LeaseTTL}
	cli := clientv3.NewCtxClient(context.Background())
	cli.KV, cli.Lease, cli.Watcher = c, c, c
	return etcdstore.New(b.storeBase(), cli)
}

// etcdConn is one process's client of the model: each call is a round
// trip of the simulated network.
type etcdConn struct {
	m   *etcdModel
	p   *simProc
	ttl time.Duration
}

var errEtcdNotModelled = errors.New("etcd model: not modelled")

func (c *etcdConn) call(ctx context.Context, kind int, exec func() (any, error)) (any, error) {
	// Requests are bounded by their contexts (etcd.go's bounded): the
	// limit only stops one that has none.
	return c.p.roundTrip(ctx, storeTarget{c.m.w}, kind, time.Minute, exec)
}

// kindOf tells a transaction's purpose by its keys: mark writes and member
// records must take no time (see roundTrip).
func kindOf(then []clientv3.Op) int {
	for _, op := range then {
		k := string(op.KeyBytes())
		switch {
		case op.IsTxn() || (op.IsPut() && strings.HasSuffix(k, "/shape")):
			return kMark
		case strings.Contains(k, "/member/"), strings.Contains(k, "/holds/"):
			return kMember
		case strings.HasSuffix(k, "/fleet"):
			return kFleet
		case op.IsDelete():
			return kRelease
		case op.IsPut() && strings.HasSuffix(k, "/lease"):
			return kClaim
		}
	}
	return kOther
}

func (c *etcdConn) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	return nil, errEtcdNotModelled
}

func (c *etcdConn) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	op := clientv3.OpGet(key, opts...)
	kind := kRenew
	switch {
	case strings.Contains(key, "/holds/"):
		kind = kMember // the hold history's trim, under leased.histMu (see roundTrip)
	case op.IsOptsWithPrefix():
		kind = kOther
	}
	v, err := c.call(ctx, kind, func() (any, error) {
		c.m.mu.Lock()
		defer c.m.mu.Unlock()
		return (*clientv3.GetResponse)(c.m.rangeLocked(op.KeyBytes(), op.RangeBytes(), op.Limit())), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*clientv3.GetResponse), nil
}

func (c *etcdConn) GetStream(context.Context, string, ...clientv3.OpOption) (clientv3.GetStreamChan, error) {
	return nil, errEtcdNotModelled
}

func (c *etcdConn) Delete(context.Context, string, ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	return nil, errEtcdNotModelled
}

func (c *etcdConn) Compact(context.Context, int64, ...clientv3.CompactOption) (*clientv3.CompactResponse, error) {
	return nil, errEtcdNotModelled
}

func (c *etcdConn) Do(context.Context, clientv3.Op) (clientv3.OpResponse, error) {
	return clientv3.OpResponse{}, errEtcdNotModelled
}

func (c *etcdConn) Txn(ctx context.Context) clientv3.Txn { return &etcdTxn{c: c, ctx: ctx} }

type etcdTxn struct {
	c         *etcdConn
	ctx       context.Context
	cmps      []clientv3.Cmp
	then, els []clientv3.Op
}

func (t *etcdTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.cmps = append(t.cmps, cs...); return t }
func (t *etcdTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.then = append(t.then, ops...); return t }
func (t *etcdTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.els = append(t.els, ops...); return t }

func (t *etcdTxn) Commit() (*clientv3.TxnResponse, error) {
	v, err := t.c.call(t.ctx, kindOf(t.then), func() (any, error) { return t.c.m.commit(t.cmps, t.then, t.els) })
	if err != nil {
		return nil, err
	}
	return v.(*clientv3.TxnResponse), nil
}

func (c *etcdConn) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	v, err := c.call(ctx, kClaim, func() (any, error) {
		m := c.m
		m.mu.Lock()
		defer m.mu.Unlock()
		m.nextID++
		l := &etcdLease{ttl: time.Duration(ttl) * time.Second, keys: map[string]bool{}}
		l.expiry = m.w.now() + l.ttl
		m.leases[m.nextID] = l
		m.poke()
		return &clientv3.LeaseGrantResponse{ResponseHeader: m.header(), ID: m.nextID, TTL: ttl}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*clientv3.LeaseGrantResponse), nil
}

func (c *etcdConn) Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	_, err := c.call(ctx, kRelease, func() (any, error) {
		m := c.m
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.leases[id] == nil {
			return nil, rpctypes.ErrLeaseNotFound
		}
		m.revokeLocked(id)
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	return &clientv3.LeaseRevokeResponse{}, nil
}

func (c *etcdConn) TimeToLive(context.Context, clientv3.LeaseID, ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error) {
	return nil, errEtcdNotModelled
}

func (c *etcdConn) Leases(context.Context) (*clientv3.LeaseLeasesResponse, error) {
	return nil, errEtcdNotModelled
}

func (c *etcdConn) KeepAlive(context.Context, clientv3.LeaseID) (<-chan *clientv3.LeaseKeepAliveResponse, error) {
	return nil, errEtcdNotModelled
}

func (c *etcdConn) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	v, err := c.call(ctx, kRenew, func() (any, error) {
		m := c.m
		m.mu.Lock()
		defer m.mu.Unlock()
		l := m.leases[id]
		if l == nil {
			return nil, rpctypes.ErrLeaseNotFound
		}
		l.expiry = m.w.now() + l.ttl // later only: the expirer need not look now
		return &clientv3.LeaseKeepAliveResponse{ResponseHeader: m.header(), ID: id, TTL: int64(l.ttl / time.Second)}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*clientv3.LeaseKeepAliveResponse), nil
}

// Watch delivers the key's events from the revision asked, each after the
// process's one-way delay; while the process is cut off, none arrives,
// and a watch that requires a leader ends when the quorum is lost.
func (c *etcdConn) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	op := clientv3.OpGet(key, opts...)
	out := make(chan clientv3.WatchResponse)
	c.m.wg.Go(func() {
		defer close(out)
		rev, w, h := op.Rev(), c.m.w, c.p.h
		for {
			c.m.mu.Lock()
			var evs []*mvccpb.Event
			for _, ev := range c.m.events {
				if ev.Kv.ModRevision >= rev && string(ev.Kv.Key) == key {
					evs = append(evs, ev)
				}
			}
			notify, head := c.m.notifyLocked(key), c.m.rev
			c.m.mu.Unlock()
			now := w.now()
			switch {
			case c.p.dead.Load():
				return
			case w.quorumLost(now):
				select {
				case out <- clientv3.WatchResponse{Header: &etcdserverpb.ResponseHeader{Revision: head}, Canceled: true, CancelReason: rpctypes.ErrNoLeader.Error()}:
				case <-ctx.Done():
				}
				return
			case len(evs) > 0 && !h.cut(now):
				if sleepUntil(ctx, w, h.wake(now+h.plan.lat)) != nil {
					return
				}
				select {
				case out <- clientv3.WatchResponse{Header: &etcdserverpb.ResponseHeader{Revision: head}, Events: evs}:
					rev = evs[len(evs)-1].Kv.ModRevision + 1
				case <-ctx.Done():
					return
				}
				continue
			}
			// Look again when a cut heals or the quorum goes.
			next := time.Duration(-1)
			later := func(t time.Duration) {
				if t > now && (next < 0 || t < next) {
					next = t
				}
			}
			for _, cw := range h.plan.partitions {
				if cw.has(now) {
					later(cw.to)
				}
			}
			for _, d := range w.noQuorum {
				later(d.from)
			}
			var heal <-chan time.Time
			if next >= 0 {
				heal = time.After(next - now)
			}
			select {
			case <-ctx.Done():
				return
			case <-c.m.done:
				return
			case <-notify:
			case <-heal:
			}
		}
	})
	return out
}

func (c *etcdConn) RequestProgress(context.Context) error { return errEtcdNotModelled }

func (c *etcdConn) Close() error { return nil }
