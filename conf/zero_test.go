package conf_test

import (
	"encoding"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/internal/connlimit"
)

// zeroRefused are the table keys whose zero does not validate where it
// would mislead, each with the error it gets: a key that cannot be left at
// a misleading zero.
var zeroRefused = map[string]string{
	// A lease store with no address, or no clock bound, is no lease.
	"machine.redis.addrs":          "Redis.Addrs: empty, but the redis provider is listed",
	"machine.redis.max_clock_skew": "0 turns the clock check off, but the redis provider needs a bound",
	"machine.etcd.endpoints":       "Etcd.Endpoints: empty, but the etcd provider is listed",
	"segment.redis.addrs":          "redisstore: invalid config: Addrs is empty",
	"segment.dsn":                  "mysqlstore: invalid config: DSN is empty",
}

// zeroMapped are the table keys whose zero conf turns into a value of its
// own, with why: connlimit has no defaults for its caps, conf owns the
// metrics listener's (and connlimit refuses a zero cap, so Go cannot
// leave one at a misleading zero either).
var zeroMapped = map[string]string{
	"metrics.max_conns":          "100; connlimit.Config.MaxConns zero does not validate",
	"metrics.max_conns_per_peer": "10; connlimit.Config.MaxConnsPerPeer zero does not validate",
}

// TestZeroSameInYAMLAndGo: every key of a package's table, written as
// its zero in YAML, reaches its package's field as that field's zero, so
// that it means what the field's comment says zero means, as it does in
// Go; or it is refused naming the key (zeroRefused), or conf owns its
// default (zeroMapped). The machine keys are read with their provider
// listed and the segment stores' with their store, so that their rules
// apply.
func TestZeroSameInYAMLAndGo(t *testing.T) {
	for _, tb := range conf.KeyTables() {
		for key, path := range tb.Fields {
			yaml := nested(t, key, zeroText(t, conf.KeyType(key)))
			var env []string
			switch {
			case strings.HasPrefix(key, "machine.redis."):
				env = []string{"VESTA_MACHINE_PROVIDERS=redis"}
			case strings.HasPrefix(key, "machine.etcd."):
				env = []string{"VESTA_MACHINE_PROVIDERS=etcd"}
			case strings.HasPrefix(key, "segment.redis."):
				env = []string{"VESTA_SEGMENT_STORE=redis"}
			case key == "segment.dsn":
				env = []string{"VESTA_SEGMENT_STORE=mysql"}
			case key == "segment.table":
				env = []string{"VESTA_SEGMENT_STORE=mysql", "VESTA_SEGMENT_DSN=vesta@tcp(db:3306)/leaf"}
			}
			l, err := loadYAML(t, yaml, env...)
			if want, ok := zeroRefused[key]; ok {
				wantKeyErrors(t, err, key, want)
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", yaml, err)
				continue
			}
			got := reflect.ValueOf(conf.Converted(l.Config, tb.Package))
			for name := range strings.SplitSeq(path, ".") {
				got = got.FieldByName(name)
			}
			if _, mapped := zeroMapped[key]; mapped {
				if got.IsZero() {
					t.Errorf("%s: %s.Config.%s is zero; want conf's default", key, tb.Package, path)
				}
				continue
			}
			if !got.IsZero() && !(got.Kind() == reflect.Slice && got.Len() == 0) {
				t.Errorf("%s: zero in YAML is %s.Config.%s %v; want the field's zero, which Go reads as its comment says", key, tb.Package, path, got)
			}
		}
	}
}

// zeroText is the YAML of a key type's zero value.
func zeroText(t *testing.T, typ reflect.Type) any {
	t.Helper()
	switch {
	case typ == reflect.TypeFor[time.Time]():
		return "" // the zero Time, the layout's epoch
	case typ == reflect.TypeFor[time.Duration]():
		return "0s"
	case typ.Implements(reflect.TypeFor[encoding.TextMarshaler]()):
		text, err := reflect.Zero(typ).Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		return string(text)
	case typ.Kind() == reflect.Slice:
		return []string{}
	}
	return reflect.Zero(typ).Interface()
}

// TestMetricsUnsentSameInConnlimit: metrics.max_unsent_bytes reaches
// connlimit as it is written, which reads it as YAML does (0 its default,
// 8 MiB, the one constant conf's default is; -1 no bound:
// connlimit's TestMaxUnsentBytesZeroAndOff).
func TestMetricsUnsentSameInConnlimit(t *testing.T) {
	for _, v := range []int64{0, -1, 4096} {
		l, err := loadYAML(t, nested(t, "metrics.max_unsent_bytes", v))
		if err != nil {
			t.Fatal(err)
		}
		if lc, err := l.Config.MetricsConfig(); err != nil || lc.MaxUnsentBytes != v {
			t.Errorf("max_unsent_bytes %d: connlimit's %d, %v; want it as written", v, lc.MaxUnsentBytes, err)
		}
	}
	if conf.DefaultConfig().Metrics.MaxUnsentBytes != connlimit.DefaultMaxUnsentBytes {
		t.Errorf("metrics.max_unsent_bytes defaults to %d; want connlimit's %d", conf.DefaultConfig().Metrics.MaxUnsentBytes, connlimit.DefaultMaxUnsentBytes)
	}
}

// TestBooleansDefaultFalse: every boolean key's default is false, its
// zero, so that leaving it out of a YAML file and out of a Go Config
// mean the same (client.no_fallback: false keeps the fallback on).
func TestBooleansDefaultFalse(t *testing.T) {
	def := conf.DefaultConfig()
	for _, k := range conf.Keys() {
		if conf.KeyType(k).Kind() == reflect.Bool && conf.KeyValue(def, k).Bool() {
			t.Errorf("%s defaults to true; want false, its zero (name the key for what true turns on or off)", k)
		}
	}
}
