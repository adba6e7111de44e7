package assemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/mysqlstore"
	"github.com/vesta-go/vesta/segment/redisstore"
	"github.com/vesta-go/vesta/segment/segmentmetrics"
)

// storeTimeout bounds the store's durability check at start-up.
const storeTimeout = 10 * time.Second

// OpenSegmentStore opens the store segment.store names (lazily: a store
// that is down shows in the first call).
func OpenSegmentStore(s conf.SegmentConfig) (segment.Store, error) {
	switch s.Store {
	case conf.SegmentStoreMySQL:
		st, err := mysqlstore.Open(mysqlstore.Config{DSN: s.DSN.Reveal(), Table: s.Table})
		if err != nil {
			return nil, fmt.Errorf("segment.dsn, segment.table: %w", err)
		}
		return st, nil
	case conf.SegmentStoreRedis:
		st, err := redisstore.Open(redisstore.Config{Addrs: s.Redis.Addrs, Password: s.Redis.Password.Reveal(), KeyPrefix: s.Redis.KeyPrefix})
		if err != nil {
			return nil, fmt.Errorf("segment.redis: %w", err)
		}
		return st, nil
	}
	return nil, fmt.Errorf("%w: segment.store %q", ErrConfig, s.Store)
}

// sequences is the segment sequencer of the assembled servers and its store.
type sequences struct {
	store segment.Store
	is    *segment.Sequencer
}

// openSequences opens the store and the issuer of cfg, with its metrics
// in reg; nil when segment.store is off. Preloaded tags are fetched now, so
// a store that is down or misses one of them stops start-up.
func openSequences(ctx context.Context, cfg conf.Config, log *slog.Logger, reg prometheus.Registerer) (*sequences, error) {
	if !cfg.Segment.Enabled() {
		return nil, nil
	}
	scfg, err := cfg.SegmentConfig()
	if err != nil {
		return nil, err
	}
	store, err := OpenSegmentStore(cfg.Segment)
	if err != nil {
		return nil, err
	}
	if rs, ok := store.(*redisstore.Store); ok {
		cctx, cancel := context.WithTimeout(ctx, storeTimeout)
		if err := rs.CheckDurability(cctx); err != nil {
			log.Warn("segment: the Redis store may lose acknowledged writes; numbers would then jump past a loss floor, never repeat", "err", err)
		}
		cancel()
	}
	m, err := segmentmetrics.New(reg)
	if err != nil {
		store.Close()
		return nil, err
	}
	scfg.Logger, scfg.OnStore = log.With("component", "segment"), m.OnStore
	is, err := segment.Open(ctx, store, scfg)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("segment (segment.store, segment.preload): %w", err)
	}
	m.Watch(is)
	log.Info("segment: sequences on", "store", cfg.Segment.Store, "tags", len(is.Tags()), "preloaded", len(scfg.Preload))
	return &sequences{store: store, is: is}, nil
}

// close stops the issuer, then the store; nil does nothing.
func (s *sequences) close() error {
	if s == nil {
		return nil
	}
	return errors.Join(s.is.Close(), s.store.Close())
}
