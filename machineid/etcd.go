package machineid

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vesta-go/vesta/core"
)

// EtcdKeys returns the etcd keys of machine id under prefix: the lease
// (the holder's token, attached to an etcd lease of the holder's), the
// time guard's mark (unix milliseconds, 20 digits zero-padded so that
// etcd's byte order is the numbers' order; only ever raised while held,
// set to the exact end of the hold by its release) and the shape of the
// generator that last wrote the mark (JSON, as ShapeKey's).
func EtcdKeys(prefix string, id core.MachineID) (lease, mark, shape string) {
	base := prefix + "/machine/" + strconv.Itoa(int(id))
	return base + "/lease", base + "/mark", base + "/shape"
}

// EtcdMemberKey is the member record of machine id's holder (see
// MemberKey), attached to the holder's etcd lease so that both go
// together. The records sit apart from the leases (prefix/member/), so
// that one bounded range reads them all. Information only.
func EtcdMemberKey(prefix string, id core.MachineID) string {
	return prefix + "/member/" + strconv.Itoa(int(id))
}

// EtcdFleetKey is the fleet record under prefix (see Lease.Prepare).
func EtcdFleetKey(prefix string) string { return prefix + "/fleet" }

// etcdMark is the stored form of a mark.
func etcdMark(ms int64) string { return fmt.Sprintf("%020d", ms) }

// etcdStore keeps leases in etcd. Raft never loses an acknowledged write
// and a minority cannot commit one, so the store needs no quarantine: a
// mark is written only in a transaction that finds the hold's lease key
// (by its create revision), so everything an old holder may still issue
// lies below a mark that was committed before its key went, and the next
// holder, claiming after that, reads it (docs/design/etcd.md).
type etcdStore struct {
	base leaseBase
	ec   EtcdConfig
	cli  *clientv3.Client

	wg      sync.WaitGroup // the holds' watches
	mu      sync.Mutex
	watches map[*hold]context.CancelFunc
}

// etcdHold is an etcd lease's own part of a hold.
type etcdHold struct {
	token     string
	lease     clientv3.LeaseID
	createRev int64 // of the lease key: it names this hold
	markKey   string
	shapeKey  string
}

func newEtcdStore(b leaseBase) (*etcdStore, error) {
	ec := b.cfg.Etcd
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: ec.Endpoints, Username: ec.Username, Password: ec.Password, TLS: ec.TLS,
		DialTimeout: commandTimeout(ec.LeaseTTL), DialKeepAliveTime: ec.LeaseTTL / 3,
		DialKeepAliveTimeout: commandTimeout(ec.LeaseTTL), Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, etcdErr(err, "etcd %v: connecting", ec.Endpoints)
	}
	return &etcdStore{base: b, ec: ec, cli: cli, watches: map[*hold]context.CancelFunc{}}, nil
}

func (s *etcdStore) where() string { return fmt.Sprintf("etcd %v", s.ec.Endpoints) }

// bounded bounds one request: etcd's client retries until its context
// ends, and a dead cluster must be noticed well before a lease's deadline.
func bounded(ctx context.Context, ttl time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, commandTimeout(ttl))
}

// etcdErr says what failed. Errors of the connection or the cluster
// (no leader, timeouts) wrap ErrUnavailable; a refused login or permission
// is a configuration problem and does not.
func etcdErr(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied, codes.InvalidArgument, codes.FailedPrecondition:
		if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return fmt.Errorf("machineid: %s: %w", what, err)
		}
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
}

// claim grants an etcd lease and attaches the first free ID's lease key to
// it, in a transaction that creates the key only if absent.
func (s *etcdStore) claim(ctx context.Context, ids []core.MachineID) (*hold, time.Time, error) {
	sent := s.base.clock.Now() // the lease's TTL starts when the leader grants it, after this
	gctx, cancel := bounded(ctx, s.ec.LeaseTTL)
	g, err := s.cli.Grant(gctx, int64(s.ec.LeaseTTL/time.Second))
	cancel()
	if err != nil {
		return nil, time.Time{}, etcdErr(err, "%s: granting a lease", s.where())
	}
	token := newToken()
	for _, id := range ids {
		leaseKey, markKey, shapeKey := EtcdKeys(s.ec.KeyPrefix, id)
		tctx, cancel := bounded(ctx, s.ec.LeaseTTL)
		resp, err := s.cli.Txn(tctx).
			If(clientv3.Compare(clientv3.CreateRevision(leaseKey), "=", 0)).
			Then(clientv3.OpPut(leaseKey, token, clientv3.WithLease(g.ID))).
			Commit()
		cancel()
		if err != nil {
			s.revoke(ctx, g.ID)
			return nil, time.Time{}, etcdErr(err, "%s: claiming %s", s.where(), leaseKey)
		}
		if !resp.Succeeded {
			continue
		}
		eh := &etcdHold{token: token, lease: g.ID, createRev: resp.Header.Revision, markKey: markKey, shapeKey: shapeKey}
		h := &hold{id: id, key: leaseKey, of: eh}
		h.guard = &leaseGuard{ms: &etcdMarks{cli: s.cli, h: eh, leaseKey: leaseKey, where: s.where(), ttl: s.ec.LeaseTTL}, machine: id, q: quarantine{trusted: true}}
		h.lost = s.watch(h, eh)
		return h, sent, nil
	}
	s.revoke(ctx, g.ID)
	return nil, time.Time{}, nil
}

// watch returns a channel closed as soon as the hold's key is deleted or
// changed. A watch that ends otherwise (the member lost its leader, the
// connection broke, the revision was compacted) is begun again after a
// pause, from the last revision seen; meanwhile the renewals ask.
func (s *etcdStore) watch(h *hold, eh *etcdHold) <-chan struct{} {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(context.Background()))
	s.mu.Lock()
	s.watches[h] = cancel
	s.mu.Unlock()
	gone := make(chan struct{})
	s.wg.Go(func() {
		rev := eh.createRev + 1
		for ctx.Err() == nil {
			for resp := range s.cli.Watch(ctx, h.key, clientv3.WithRev(rev)) {
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
func (s *etcdStore) unwatch(h *hold) {
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
func (s *etcdStore) revoke(ctx context.Context, id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commandTimeout(s.ec.LeaseTTL))
	defer cancel()
	if _, err := s.cli.Revoke(ctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		s.base.log.Warn("machineid: revoking an etcd lease failed; it expires", "lease", fmt.Sprintf("%x", int64(id)), "ttl", s.ec.LeaseTTL, "err", err)
	}
}

// renew sends one keepalive, then reads the key linearizably: a member
// that lost the quorum cannot answer the read, so a renewal counts only
// while the cluster's majority still has the key as ours (even an old
// leader that still takes keepalives cannot make it count).
func (s *etcdStore) renew(ctx context.Context, h *hold) (time.Time, error) {
	eh := h.of.(*etcdHold)
	ctx, cancel := bounded(ctx, s.ec.LeaseTTL)
	defer cancel()
	sent := s.base.clock.Now()
	if _, err := s.cli.KeepAliveOnce(ctx, eh.lease); err != nil {
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return sent, fmt.Errorf("%w: machine %d: the etcd lease of %s expired or was revoked", ErrLeaseLost, h.id, h.key)
		}
		return sent, etcdErr(err, "%s: renewing the lease of %s", s.where(), h.key)
	}
	resp, err := s.cli.Get(ctx, h.key)
	if err != nil {
		return sent, etcdErr(err, "%s: reading %s", s.where(), h.key)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != eh.createRev || resp.Kvs[0].Lease != int64(eh.lease) {
		return sent, fmt.Errorf("%w: machine %d: %s is no longer this process's (deleted or taken over)", ErrLeaseLost, h.id, h.key)
	}
	return sent, nil
}

// release deletes h's key if it is still h's, setting the mark to the
// exact end of what h issued in the same transaction, then revokes the
// etcd lease.
func (s *etcdStore) release(ctx context.Context, h *hold, final time.Time, exact bool) error {
	eh := h.of.(*etcdHold)
	s.unwatch(h)
	defer s.revoke(ctx, eh.lease)
	if !exact {
		return nil
	}
	ms := final.UnixMilli()
	if final.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	ctx, cancel := bounded(ctx, s.ec.LeaseTTL)
	defer cancel()
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(h.key), "=", eh.createRev)).
		Then(clientv3.OpPut(eh.markKey, etcdMark(ms)), clientv3.OpDelete(h.key)).
		Commit()
	if err != nil {
		return etcdErr(err, "%s: releasing %s (it expires within %s)", s.where(), h.key, s.ec.LeaseTTL)
	}
	if !resp.Succeeded {
		s.base.log.Info("machineid: the lease was no longer ours at release", "key", h.key)
	}
	return nil
}

// fleet records f under the key prefix, or compares it with the record.
func (s *etcdStore) fleet(ctx context.Context, f fleet) error {
	key := EtcdFleetKey(s.ec.KeyPrefix)
	ctx, cancel := bounded(ctx, s.ec.LeaseTTL)
	defer cancel()
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, f.encode())).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return etcdErr(err, "%s: reading the fleet record %s", s.where(), key)
	}
	if resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return fmt.Errorf("%w: %s: the fleet record %s vanished while read", ErrUnavailable, s.where(), key)
	}
	return judgeFleet(f, string(kvs[0].Value), key, s.where())
}

// putMember writes h's member record, attached to h's etcd lease, in a
// transaction that finds h's lease key.
func (s *etcdStore) putMember(ctx context.Context, h *hold, rec string) error {
	eh := h.of.(*etcdHold)
	_, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(h.key), "=", eh.createRev)).
		Then(clientv3.OpPut(EtcdMemberKey(s.ec.KeyPrefix, h.id), rec, clientv3.WithLease(eh.lease))).
		Commit()
	if err != nil {
		return etcdErr(err, "%s: writing the member record of machine %d", s.where(), h.id)
	}
	return nil
}

// dropMember has nothing to do: the release revokes the etcd lease, and
// the record with it.
func (s *etcdStore) dropMember(context.Context, *hold) error { return nil }

// members reads the member records in one range, at most one per machine
// ID. etcd cannot read part of a value: a huge one is read and skipped,
// bounded by etcd's own request limit.
func (s *etcdStore) members(ctx context.Context) ([]rawMember, error) {
	dir := s.ec.KeyPrefix + "/member/"
	resp, err := s.cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithLimit(int64(core.MaxMachine)+1))
	if err != nil {
		return nil, etcdErr(err, "%s: reading the member records", s.where())
	}
	var out []rawMember
	for _, kv := range resp.Kvs {
		n, err := strconv.ParseUint(string(kv.Key[len(dir):]), 10, 16)
		if err != nil || n > uint64(core.MaxMachine) {
			out = append(out, rawMember{key: clip(string(kv.Key), maxAddrBytes), skip: "not a machine ID's key"})
			continue
		}
		r := rawMember{key: string(kv.Key), id: core.MachineID(n), value: string(kv.Value)}
		if len(kv.Value) > maxMemberBytes {
			r.value, r.skip = "", fmt.Sprintf("%d bytes, above %d", len(kv.Value), maxMemberBytes)
		}
		out = append(out, r)
	}
	if resp.More {
		out = append(out, rawMember{key: dir, skip: fmt.Sprintf("more than %d records; the rest not read", len(resp.Kvs))})
	}
	return out, nil
}

func (s *etcdStore) prefix() string { return s.ec.KeyPrefix }

func (s *etcdStore) close() error {
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

func (e *etcdMarks) names() (string, string) { return e.h.markKey, e.leaseKey }

func (e *etcdMarks) read(ctx context.Context) (int64, string, error) {
	ctx, cancel := bounded(ctx, e.ttl)
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
func (e *etcdMarks) write(ctx context.Context, ms int64, shape string) (bool, error) {
	put := clientv3.OpPut(e.h.markKey, etcdMark(ms))
	raise := clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.Value(e.h.markKey), "<", etcdMark(ms))},
		[]clientv3.Op{put},
		[]clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(e.h.markKey), "=", 0)}, []clientv3.Op{put}, nil)})
	ops := []clientv3.Op{raise}
	if shape != "" {
		ops = append(ops, clientv3.OpPut(e.h.shapeKey, shape))
	}
	ctx, cancel := bounded(ctx, e.ttl)
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
