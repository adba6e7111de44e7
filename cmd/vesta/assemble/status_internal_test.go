package assemble

import (
	"strings"
	"testing"

	"github.com/vesta-go/vesta/conf"
)

// TestStoreInfo: the segment store is named by its kind and address, its
// password never shown.
func TestStoreInfo(t *testing.T) {
	for _, c := range []struct {
		cfg  conf.SegmentConfig
		want string
	}{
		{conf.SegmentConfig{Store: "mysql", DSN: "ids:s3cretpw@tcp(db.internal:3306)/vesta", Table: "segments"}, "db.internal:3306/vesta table segments"},
		{conf.SegmentConfig{Store: "mysql", DSN: "not a dsn s3cretpw"}, "(dsn not parsed)"},
		{conf.SegmentConfig{Store: "redis", Redis: conf.SegmentRedisConfig{Addrs: []string{"r1:6379", "r2:6379"},
			Password: "s3cretpw", KeyPrefix: "vesta:seg"}}, "r1:6379,r2:6379 prefix vesta:seg"},
	} {
		got := storeInfo(c.cfg)
		if got.Kind != c.cfg.Store || got.Addr != c.want || strings.Contains(got.Addr, "s3cretpw") {
			t.Errorf("%s: %+v, want %q", c.cfg.Store, got, c.want)
		}
	}
}
