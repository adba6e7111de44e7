package machineid

import (
	"fmt"
	"testing"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid/internal/leasestore"
)

// SetMaxRedisReach replaces, for one test, the bound that validation holds
// every Redis-leasing host to and that a takeover quarantine waits
// (MaxRedisReach). machineid's Redis tests lease with a short one
// (redisConfig), so that a quarantine on the host's real clock costs
// seconds, not 20; the tests whose hosts need more set theirs. The tests
// do not run in parallel.
func SetMaxRedisReach(tb testing.TB, d time.Duration) {
	old := maxRedisReach
	maxRedisReach = d
	tb.Cleanup(func() { maxRedisReach = old })
}

// Reach is the bound in force (see SetMaxRedisReach).
func Reach() time.Duration { return maxRedisReach }

// SetReach sets the bound for the rest of the process: for the tests'
// holder subprocess, which has no testing.TB and leases as the tests do.
func SetReach(d time.Duration) { maxRedisReach = d }

// HistoryOf builds machine id's history from stored entries as a store
// would return them (values; "" skipped unread), read at now, with the
// default bounds: for the decoder's fuzz test and At's table.
func HistoryOf(id core.MachineID, values []string, now time.Time) History {
	raws := make([]leasestore.RawHold, len(values))
	for i, v := range values {
		raws[i] = leasestore.RawHold{Key: fmt.Sprintf("entry %d", i), Value: v}
		if v == "" {
			raws[i].Skip = "unread"
		}
	}
	return buildHistory(StoreRedis, "vesta", id, HistoryConfig{Holds: DefaultHistoryHolds, MaxAge: DefaultHistoryMaxAge}, raws, nil, "", now)
}
