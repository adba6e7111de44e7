package etcdstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// The hold history in etcd: one plain key per hold, HoldsPrefix + the
// hold's name (its lease key's create revision, 20 digits, so that keys
// sort as the holds began), holding the entry's JSON. The keys outlive
// the holds (no etcd lease): each new holder of the ID trims them in its
// first write. Information only: nothing reads them for a safety decision.

// HoldName is the lease key's create revision: it names the hold.
func (s *Store) HoldName(h *leasestore.Hold) (string, string) {
	eh := h.Of.(*etcdHold)
	return fmt.Sprintf("%020d", eh.createRev), fmt.Sprintf("etcd lease %x revision %d", int64(eh.lease), eh.createRev)
}

// PutHold writes the entry in a transaction that finds h's lease key. The
// hold's first write also trims the ID's history: the entries older than
// cutMs and the oldest past keep go, in the same transaction.
func (s *Store) PutHold(ctx context.Context, h *leasestore.Hold, name, rec string, _ int64, keep leasestore.Keep, cutMs int64) error {
	eh := h.Of.(*etcdHold)
	dir := HoldsPrefix(s.ec.KeyPrefix, h.ID)
	ops := []clientv3.Op{clientv3.OpPut(dir+name, rec)}
	if !eh.trimmed.Load() {
		drop, err := s.trimHolds(ctx, dir, name, keep, cutMs)
		if err != nil {
			return err
		}
		for _, k := range drop {
			ops = append(ops, clientv3.OpDelete(k))
		}
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(h.Key), "=", eh.createRev)).
		Then(ops...).
		Commit()
	if err != nil {
		return etcdErr(err, "%s: writing the hold history of machine %d", s.Where(), h.ID)
	}
	if resp.Succeeded {
		eh.trimmed.Store(true)
	}
	return nil
}

// trimHolds returns the keys of dir to delete so that at most keep.Holds
// entries remain with name's, none older than cutMs: those not read as
// an entry count as oldest.
func (s *Store) trimHolds(ctx context.Context, dir, name string, keep leasestore.Keep, cutMs int64) ([]string, error) {
	resp, err := s.cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithLimit(4*leasestore.MaxHistoryHolds))
	if err != nil {
		return nil, etcdErr(err, "%s: reading the hold history %s", s.Where(), dir)
	}
	type entry struct {
		key  string
		last int64
	}
	var es []entry
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); k != dir+name {
			es = append(es, entry{key: k, last: leasestore.LastOf(kv.Value)})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(b.last, a.last) }) // latest first
	var drop []string
	for i, e := range es {
		if i+1 >= keep.Holds || e.last < cutMs {
			drop = append(drop, e.key)
		}
	}
	return drop, nil
}

// Holds reads machine id's history in one range: the latest
// MaxHistoryHolds keys. etcd cannot read part of a value: a huge one is
// read and skipped, bounded by etcd's own request limit.
func (s *Store) Holds(ctx context.Context, id core.MachineID) ([]leasestore.RawHold, error) {
	dir := HoldsPrefix(s.ec.KeyPrefix, id)
	resp, err := s.cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithLimit(leasestore.MaxHistoryHolds),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend))
	if err != nil {
		return nil, etcdErr(err, "%s: reading the hold history of machine %d (%s)", s.Where(), id, dir)
	}
	out := make([]leasestore.RawHold, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		r := leasestore.RawHold{Key: leasestore.Clip(string(kv.Key), leasestore.MaxAddrBytes), Value: string(kv.Value)}
		if len(kv.Value) > leasestore.MaxHoldBytes {
			r.Value, r.Skip = "", fmt.Sprintf("%d bytes, above %d", len(kv.Value), leasestore.MaxHoldBytes)
		}
		out = append(out, r)
	}
	return out, nil
}
