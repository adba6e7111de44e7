package etcdstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// etcdMark is the stored form of a mark.
func etcdMark(ms int64) string { return fmt.Sprintf("%020d", ms) }

// Store keeps leases in etcd. Raft never loses an acknowledged write
// and a minority cannot commit one, so the store needs no quarantine: a
// mark is written only in a transaction that finds the hold's lease key
// (by its create revision), so everything an old holder may still issue
// lies below a mark that was committed before its key went, and the next
// holder, claiming after that, reads it (docs/design/etcd.md).
type Store struct {
	base leasestore.Base
	ec   leasestore.EtcdSettings
	cli  *clientv3.Client

	wg      sync.WaitGroup // the holds' watches
	mu      sync.Mutex
	watches map[*leasestore.Hold]context.CancelFunc
}

// etcdHold is an etcd lease's own part of a hold.
type etcdHold struct {
	token     string
	lease     clientv3.LeaseID
	createRev int64 // of the lease key: it names this hold
	markKey   string
	shapeKey  string
	trimmed   atomic.Bool // its first write trimmed the hold history (history.go)
}

// Provider is the etcd provider's store (machineid/etcdlease registers
// it).
var Provider = leasestore.Provider{
	Open:  open,
	Check: func(b leasestore.Base) error { _, err := tlsOf(b.Etcd.TLS); return err },
}

// tlsOf is the TLS setting as the client takes it: nil, or a *tls.Config.
func tlsOf(v any) (*tls.Config, error) {
	c, ok := v.(*tls.Config) // a nil *tls.Config is plain TCP too
	if v != nil && !ok {
		return nil, fmt.Errorf("%w: Etcd.TLS: a %T; want a *tls.Config, or nil for plain TCP", leasestore.ErrConfig, v)
	}
	return c, nil
}

// open is the store of b.Etcd, on a client of its endpoints.
func open(_ context.Context, b leasestore.Base) (leasestore.Store, error) {
	ec := b.Etcd
	tc, err := tlsOf(ec.TLS)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: ec.Endpoints, Username: ec.Username, Password: ec.Password, TLS: tc,
		DialTimeout: leasestore.CommandTimeout(ec.LeaseTTL), DialKeepAliveTime: ec.LeaseTTL / 3,
		DialKeepAliveTimeout: leasestore.CommandTimeout(ec.LeaseTTL), Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, etcdErr(err, "etcd %v: connecting", ec.Endpoints)
	}
	return New(b, cli), nil
}

// New is the store of b.Etcd on cli, which it closes at Close: the lease
// simulation's client reaches a model of etcd.
func New(b leasestore.Base, cli *clientv3.Client) *Store {
	return &Store{base: b, ec: b.Etcd, cli: cli, watches: map[*leasestore.Hold]context.CancelFunc{}}
}

// Where names the etcd cluster for messages.
func (s *Store) Where() string { return fmt.Sprintf("etcd %v", s.ec.Endpoints) }

// etcdErr says what failed. Errors of the connection or the cluster
// (no leader, timeouts) wrap leasestore.ErrUnavailable; a refused login or permission
// is a configuration problem and does not.
func etcdErr(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied, codes.InvalidArgument, codes.FailedPrecondition:
		if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return fmt.Errorf("machineid: %s: %w", what, err)
		}
	}
	return fmt.Errorf("%w: %s: %w", leasestore.ErrUnavailable, what, err)
}

// claim grants an etcd lease and attaches the first free ID's lease key to
// it, in a transaction that creates the key only if absent.
func (s *Store) Claim(ctx context.Context, ids []core.MachineID) (*leasestore.Hold, time.Time, error) {
	sent := s.base.Clock.Now() // the lease's TTL starts when the leader grants it, after this
	gctx, cancel := leasestore.Bounded(ctx, s.ec.LeaseTTL)
	g, err := s.cli.Grant(gctx, int64(s.ec.LeaseTTL/time.Second))
	cancel()
	if err != nil {
		return nil, time.Time{}, etcdErr(err, "%s: granting a lease", s.Where())
	}
	token := leasestore.NewToken()
	for _, id := range ids {
		leaseKey, markKey, shapeKey := Keys(s.ec.KeyPrefix, id)
		tctx, cancel := leasestore.Bounded(ctx, s.ec.LeaseTTL)
		resp, err := s.cli.Txn(tctx).
			If(clientv3.Compare(clientv3.CreateRevision(leaseKey), "=", 0)).
			Then(clientv3.OpPut(leaseKey, token, clientv3.WithLease(g.ID))).
			Commit()
		cancel()
		if err != nil {
			s.revoke(ctx, g.ID)
			return nil, time.Time{}, etcdErr(err, "%s: claiming %s", s.Where(), leaseKey)
		}
		if !resp.Succeeded {
			continue
		}
		eh := &etcdHold{token: token, lease: g.ID, createRev: resp.Header.Revision, markKey: markKey, shapeKey: shapeKey}
		h := &leasestore.Hold{ID: id, Key: leaseKey, Of: eh}
		h.Guard = leasestore.NewGuard(&etcdMarks{cli: s.cli, h: eh, leaseKey: leaseKey, where: s.Where(), ttl: s.ec.LeaseTTL}, id, leasestore.Quarantine{Trusted: true})
		h.Lost = s.watch(h, eh)
		return h, sent, nil
	}
	s.revoke(ctx, g.ID)
	return nil, time.Time{}, nil
}

// watch returns a channel closed as soon as the hold's key is deleted or
// changed. A watch that ends otherwise (the member lost its leader, the
// connection broke, the revision was compacted) is begun again after a
// pause, from the last revision seen; meanwhile the renewals ask.
func (s *Store) watch(h *leasestore.Hold, eh *etcdHold) <-chan struct{} {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	s.mu.Lock()
	s.watches[h] = cancel
	s.mu.Unlock()
	gone := make(chan struct{})
	s.wg.Go(func() {
		rev := eh.createRev + 1
		for ctx.Err() == nil {
			for resp := range s.cli.Watch(ctx, h.Key, clientv3.WithRev(rev)) {
				if resp.CompactRevision > rev {
					rev = resp.CompactRevision // events before it are gone: the renewals' read covers them
				}
				for _, ev := range resp.Events {
					if ev.Type == clientv3.EventTypeDelete || ev.Kv.CreateRevision != eh.createRev || ev.Kv.Lease != int64(eh.lease) {
						close(gone)
						return
					}
				}
				rev = max(rev, resp.Header.Revision+1)
			}
			t := time.NewTimer(watchPause)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	})
	return gone
}

// watchPause is how long a watch that ended waits before it begins again.
const watchPause = 500 * time.Millisecond

// unwatch stops the hold's watch.
func (s *Store) unwatch(h *leasestore.Hold) {
	s.mu.Lock()
	cancel := s.watches[h]
	delete(s.watches, h)
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// revoke gives an etcd lease back, and with it the key attached; a lease
// that cannot be revoked expires.
func (s *Store) revoke(ctx context.Context, id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leasestore.CommandTimeout(s.ec.LeaseTTL))
	defer cancel()
	if _, err := s.cli.Revoke(ctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		s.base.Log.Warn("machineid: revoking an etcd lease failed; it expires", "lease", fmt.Sprintf("%x", int64(id)), "ttl", s.ec.LeaseTTL, "err", err)
	}
}

// renew sends one keepalive, then reads the key linearizably: a member
// that lost the quorum cannot answer the read, so a renewal counts only
// while the cluster's majority still has the key as ours (even an old
// leader that still takes keepalives cannot make it count).
func (s *Store) Renew(ctx context.Context, h *leasestore.Hold) (time.Time, error) {
	eh := h.Of.(*etcdHold)
	ctx, cancel := leasestore.Bounded(ctx, s.ec.LeaseTTL)
	defer cancel()
	sent := s.base.Clock.Now()
	if _, err := s.cli.KeepAliveOnce(ctx, eh.lease); err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return sent, fmt.Errorf("%w: machine %d: the etcd lease of %s expired or was revoked", leasestore.ErrLeaseLost, h.ID, h.Key)
		}
		return sent, etcdErr(err, "%s: renewing the lease of %s", s.Where(), h.Key)
	}
	resp, err := s.cli.Get(ctx, h.Key)
	if err != nil {
		return sent, etcdErr(err, "%s: reading %s", s.Where(), h.Key)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != eh.createRev || resp.Kvs[0].Lease != int64(eh.lease) {
		return sent, fmt.Errorf("%w: machine %d: %s is no longer this process's (deleted or taken over)", leasestore.ErrLeaseLost, h.ID, h.Key)
	}
	return sent, nil
}

// release deletes h's key if it is still h's, setting the mark to the
// exact end of what h issued in the same transaction, then revokes the
// etcd lease.
func (s *Store) Release(ctx context.Context, h *leasestore.Hold, final time.Time, exact bool) error {
	eh := h.Of.(*etcdHold)
	s.unwatch(h)
	defer s.revoke(ctx, eh.lease)
	if !exact {
		return nil
	}
	ms := final.UnixMilli()
	if final.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	ctx, cancel := leasestore.Bounded(ctx, s.ec.LeaseTTL)
	defer cancel()
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(h.Key), "=", eh.createRev)).
		Then(clientv3.OpPut(eh.markKey, etcdMark(ms)), clientv3.OpDelete(h.Key)).
		Commit()
	if err != nil {
		return etcdErr(err, "%s: releasing %s (it expires within %s)", s.Where(), h.Key, s.ec.LeaseTTL)
	}
	if !resp.Succeeded {
		s.base.Log.Info("machineid: the lease was no longer ours at release", "key", h.Key)
	}
	return nil
}

// fleet records f under the key prefix, or compares it with the record.
func (s *Store) Fleet(ctx context.Context, f leasestore.Fleet) error {
	key := FleetKey(s.ec.KeyPrefix)
	ctx, cancel := leasestore.Bounded(ctx, s.ec.LeaseTTL)
	defer cancel()
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, f.Encode())).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return etcdErr(err, "%s: reading the fleet record %s", s.Where(), key)
	}
	if resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return fmt.Errorf("%w: %s: the fleet record %s vanished while read", leasestore.ErrUnavailable, s.Where(), key)
	}
	return leasestore.JudgeFleet(f, string(kvs[0].Value), key, s.Where())
}

// putMember writes h's member record, attached to h's etcd lease, in a
// transaction that finds h's lease key.
func (s *Store) PutMember(ctx context.Context, h *leasestore.Hold, rec string) error {
	eh := h.Of.(*etcdHold)
	_, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(h.Key), "=", eh.createRev)).
		Then(clientv3.OpPut(MemberKey(s.ec.KeyPrefix, h.ID), rec, clientv3.WithLease(eh.lease))).
		Commit()
	if err != nil {
		return etcdErr(err, "%s: writing the member record of machine %d", s.Where(), h.ID)
	}
	return nil
}

// dropMember has nothing to do: the release revokes the etcd lease, and
// the record with it.
func (s *Store) DropMember(context.Context, *leasestore.Hold) error { return nil }

// members reads the member records in one range, at most one per machine
// ID. etcd cannot read part of a value: a huge one is read and skipped,
// bounded by etcd's own request limit.
func (s *Store) Members(ctx context.Context) ([]leasestore.RawMember, error) {
	dir := s.ec.KeyPrefix + "/member/"
	resp, err := s.cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithLimit(int64(core.MaxMachine)+1))
	if err != nil {
		return nil, etcdErr(err, "%s: reading the member records", s.Where())
	}
	var out []leasestore.RawMember
	for _, kv := range resp.Kvs {
		n, err := strconv.ParseUint(string(kv.Key[len(dir):]), 10, 16)
		if err != nil || n > uint64(core.MaxMachine) {
			out = append(out, leasestore.RawMember{Key: leasestore.Clip(string(kv.Key), leasestore.MaxAddrBytes), Skip: "not a machine ID's key"})
			continue
		}
		r := leasestore.RawMember{Key: string(kv.Key), ID: core.MachineID(n), Value: string(kv.Value)}
		if len(kv.Value) > leasestore.MaxMemberBytes {
			r.Value, r.Skip = "", fmt.Sprintf("%d bytes, above %d", len(kv.Value), leasestore.MaxMemberBytes)
		}
		out = append(out, r)
	}
	if resp.More {
		out = append(out, leasestore.RawMember{Key: dir, Skip: fmt.Sprintf("more than %d records; the rest not read", len(resp.Kvs))})
	}
	return out, nil
}

func (s *Store) Prefix() string { return s.ec.KeyPrefix }

func (s *Store) Close() error {
	s.mu.Lock()
	for h, cancel := range s.watches {
		cancel()
		delete(s.watches, h)
	}
	s.mu.Unlock()
	err := s.cli.Close()
	s.wg.Wait()
	return err
}

// etcdMarks is the markStore of an etcd hold.
type etcdMarks struct {
	cli      *clientv3.Client
	h        *etcdHold
	leaseKey string
	where    string
	ttl      time.Duration
}

func (e *etcdMarks) Names() (string, string) { return e.h.markKey, e.leaseKey }

func (e *etcdMarks) Read(ctx context.Context) (int64, string, error) {
	ctx, cancel := leasestore.Bounded(ctx, e.ttl)
	defer cancel()
	resp, err := e.cli.Txn(ctx).Then(clientv3.OpGet(e.h.markKey), clientv3.OpGet(e.h.shapeKey)).Commit()
	if err != nil {
		return 0, "", etcdErr(err, "%s: loading the mark %s", e.where, e.h.markKey)
	}
	value := func(i int) (string, bool) {
		kvs := resp.Responses[i].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return "", false
		}
		return string(kvs[0].Value), true
	}
	m, ok := value(0)
	if !ok {
		return 0, "", nil
	}
	ms, err := strconv.ParseInt(m, 10, 64)
	if err != nil || ms < 0 || len(m) != 20 {
		return 0, "", fmt.Errorf("machineid: the mark %s in %s is damaged (%q); delete it only if no ID was issued with its machine ID in the last minutes", e.h.markKey, e.where, m)
	}
	sh, _ := value(1)
	return ms, sh, nil
}

// write raises the mark in a transaction that finds the hold's lease key:
// the mark when lower, or created when missing; the shape beside it.
func (e *etcdMarks) Write(ctx context.Context, ms int64, shape string) (bool, error) {
	put := clientv3.OpPut(e.h.markKey, etcdMark(ms))
	raise := clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.Value(e.h.markKey), "<", etcdMark(ms))},
		[]clientv3.Op{put},
		[]clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(e.h.markKey), "=", 0)}, []clientv3.Op{put}, nil)})
	ops := []clientv3.Op{raise}
	if shape != "" {
		ops = append(ops, clientv3.OpPut(e.h.shapeKey, shape))
	}
	ctx, cancel := leasestore.Bounded(ctx, e.ttl)
	defer cancel()
	resp, err := e.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(e.leaseKey), "=", e.h.createRev)).
		Then(ops...).
		Commit()
	if err != nil {
		return false, etcdErr(err, "%s: saving the mark %s", e.where, e.h.markKey)
	}
	return resp.Succeeded, nil
}
