package conf

import (
	"time"

	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/mysqlstore"
	"github.com/vesta-go/vesta/segment/redisstore"
)

// SegmentConfig is the segment sequences' store and issuer (Leaf's segment
// mode): dense numbers per tag, from ranges reserved in MySQL/MariaDB or
// Redis, served by `vesta serve` over RPC, REST and Leaf's HTTP API.
type SegmentConfig struct {
	// Store is where ranges are reserved: "" (the zero value) turns
	// sequences off; mysql (Leaf's leaf_alloc table, through dsn) or redis
	// (segment.redis).
	Store string `koanf:"store"`
	// DSN and Table are mysqlstore.Config's: their meaning, zero included
	// (DSN "" does not validate, Table "" is Leaf's leaf_alloc), and their
	// checks are there, judged with store mysql. Load fills DSN from
	// DSNFile when that is set.
	DSN Secret `koanf:"dsn" field:"mysqlstore.DSN"`
	// DSNFile holds the DSN (read by Load, trailing newline trimmed); ""
	// is none. Setting it and DSN is an error.
	DSNFile string             `koanf:"dsn_file"`
	Table   string             `koanf:"table" field:"mysqlstore.Table"`
	Redis   SegmentRedisConfig `koanf:"redis"`
	// Threshold, TargetDuration, MaxStep, Preload and RefreshTags are
	// segment.Config's fields (segmentKeys): their meaning, zero
	// included, and their limits are documented there.
	Threshold      float64       `koanf:"threshold" field:"segment.Threshold"`
	TargetDuration time.Duration `koanf:"target_duration" field:"segment.TargetDuration"`
	MaxStep        int64         `koanf:"max_step" field:"segment.MaxStep"`
	Preload        []string      `koanf:"preload" field:"segment.Preload"`
	RefreshTags    time.Duration `koanf:"refresh_tags" field:"segment.RefreshTags"`
}

// SegmentRedisConfig is the redis store of segment sequences.
type SegmentRedisConfig struct {
	// Addrs, Password and KeyPrefix are redisstore.Config's: their
	// meaning, zero included (KeyPrefix "" is vesta:seg), and their
	// checks are there, judged with store redis. Load fills Password from
	// PasswordFile when set.
	Addrs    []string `koanf:"addrs" field:"redisstore.Addrs"`
	Password Secret   `koanf:"password" field:"redisstore.Password"`
	// PasswordFile holds the password (trailing newline trimmed); "" is
	// none. Setting it and Password is an error.
	PasswordFile string `koanf:"password_file"`
	KeyPrefix    string `koanf:"key_prefix" field:"redisstore.KeyPrefix"`
}

// The stores segment.store may name.
const (
	SegmentStoreOff   = ""
	SegmentStoreMySQL = "mysql"
	SegmentStoreRedis = "redis"
)

// defaultSegment is Leaf's configuration, with the store off.
func defaultSegment() SegmentConfig {
	return SegmentConfig{ // segmentKeys' come from segment.DefaultConfig
		Table: mysqlstore.DefaultTable,
		Redis: SegmentRedisConfig{Addrs: []string{"127.0.0.1:6379"}, KeyPrefix: "vesta:seg"},
	}
}

// Enabled reports whether a store is configured.
func (s SegmentConfig) Enabled() bool { return s.Store != SegmentStoreOff }

func (s SegmentConfig) validate(ck *checker) {
	switch s.Store {
	case SegmentStoreOff, SegmentStoreMySQL, SegmentStoreRedis:
	default:
		ck.add("segment.store", `%q; want "" (off), mysql or redis`, clip(s.Store))
	}
	// The issuer's keys are segment's to judge (segmentKeys); a preloaded
	// tag listed twice is conf's.
	seen := map[string]bool{}
	for _, tag := range s.Preload {
		if seen[tag] {
			ck.add("segment.preload", "%q listed twice", clip(tag))
		}
		seen[tag] = true
	}
}

// SegmentConfig returns the segment sequencer's configuration: threshold, target
// duration, max step, preloaded tags and the refresh period, as they are.
// Clock, Logger and OnStore are left for the caller. It
// validates c first.
func (c Config) SegmentConfig() (segment.Config, error) {
	if err := c.Validate(); err != nil {
		return segment.Config{}, err
	}
	return c.segmentConfig(), nil
}

// segmentConfig is SegmentConfig without the checks.
func (c Config) segmentConfig() segment.Config {
	cfg := segment.DefaultConfig()
	fromKeys(c, &cfg, segmentKeys)
	return cfg
}

// segmentMySQLConfig is the mysql segment store's configuration, which
// Validate judges with segment.store mysql: segment.dsn and segment.table.
func (c Config) segmentMySQLConfig() mysqlstore.Config {
	var mc mysqlstore.Config
	fromKeys(c, &mc, segmentMySQLKeys)
	return mc
}

// segmentRedisConfig is the redis segment store's configuration, which
// Validate judges with segment.store redis: segment.redis's addresses,
// password and key prefix.
func (c Config) segmentRedisConfig() redisstore.Config {
	var rc redisstore.Config
	fromKeys(c, &rc, segmentRedisKeys)
	return rc
}
