// Package peerrate keeps a token bucket per peer address, in a table of
// bounded size: the REST server's limit on failed authentications, and
// the servers' one log line per peer and interval for failed TLS
// handshakes (a plaintext client on a TLS port fails every time).
//
// Only a peer that spends has an entry. An entry whose bucket has filled
// up again, and that has no refusals to report, is worth nothing and is
// dropped when met at the front of the table; at the cap the least
// recently used entry goes. So a flood of addresses costs at most the cap
// in memory; it can push a limited peer out and so restore its burst, but
// a peer that has that many addresses has that many buckets anyway.
package peerrate

import (
	"container/list"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Limiter is the table. Its methods are safe for concurrent use.
type Limiter struct {
	every time.Duration // one token comes back per every
	slack time.Duration // (burst-1)*every: how far ahead a peer may spend
	max   int

	size atomic.Int64 // len(peers): Wait of an empty table takes no lock

	mu    sync.Mutex
	peers map[string]*list.Element
	lru   list.List // *entry, least recently used first
}

// entry is one peer's bucket as the time it is full again (the
// "theoretical arrival time" of the generic cell-rate algorithm).
type entry struct {
	peer    string
	full    time.Time
	refused int // since the last spend that succeeded
}

// New returns a limiter of burst tokens per peer, one back every every,
// for at most max peers at a time; all three must be positive.
func New(burst int, every time.Duration, max int) *Limiter {
	if burst < 1 || every <= 0 || max < 1 {
		panic("peerrate: burst, every and max must be positive")
	}
	return &Limiter{every: every, slack: time.Duration(burst-1) * every, max: max, peers: make(map[string]*list.Element)}
}

// Spend takes one of peer's tokens at now. ok: it had one; refused is then
// how many spends it refused since the last that succeeded (for a log
// line to say how many it stands for). Otherwise wait is how long until a
// token is back.
func (l *Limiter) Spend(peer string, now time.Time) (ok bool, wait time.Duration, refused int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	el := l.peers[peer]
	if el == nil {
		l.sweep(now)
		el = l.lru.PushBack(&entry{peer: peer, full: now})
		l.peers[peer] = el
		l.size.Store(int64(len(l.peers)))
	} else {
		l.lru.MoveToBack(el)
	}
	e := el.Value.(*entry)
	full := e.full
	if full.Before(now) {
		full = now
	}
	if ahead := full.Sub(now); ahead > l.slack {
		e.refused++
		return false, ahead - l.slack, 0
	}
	e.full, refused, e.refused = full.Add(l.every), e.refused, 0
	return true, 0, refused
}

// Wait is how long peer must wait at now before Spend succeeds, without
// spending: 0 when it has a token (a peer without an entry has them all).
func (l *Limiter) Wait(peer string, now time.Time) time.Duration {
	if l.size.Load() == 0 { // every request of a server nobody fails at
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	el := l.peers[peer]
	if el == nil {
		return 0
	}
	return max(0, el.Value.(*entry).full.Sub(now)-l.slack)
}

// Len is the number of peers in the table.
func (l *Limiter) Len() int { return int(l.size.Load()) }

// sweep makes room for one entry: it drops worthless entries from the
// front, then, at the cap, the least recently used one.
func (l *Limiter) sweep(now time.Time) {
	for el := l.lru.Front(); el != nil; el = l.lru.Front() {
		e := el.Value.(*entry)
		if len(l.peers) < l.max && (e.full.After(now) || e.refused > 0) {
			return
		}
		l.lru.Remove(el)
		delete(l.peers, e.peer)
		l.size.Store(int64(len(l.peers)))
	}
}

// Log lines: at most one per peer and LogEvery, for LogPeers peers at a
// time (past them, the least recent peer may log again early).
const (
	LogEvery = time.Minute
	LogPeers = 4096
)

// NewLog returns the limiter of Warn's log lines.
func NewLog() *Limiter { return New(1, LogEvery, LogPeers) }

// Warn logs msg and args at Warn, with the number of lines it dropped
// since the last ("suppressed"), unless peer had its line within the
// interval: for a limiter of one token per interval, as NewLog's.
func (l *Limiter) Warn(log *slog.Logger, peer, msg string, args ...any) {
	if ok, _, n := l.Spend(peer, time.Now()); ok {
		log.Warn(msg, append(args, "suppressed", n)...)
	}
}
