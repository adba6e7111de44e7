package machineid

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// ModelRedis is the lease simulation's Redis (redisModel) as a go-redis
// hook with no network, on clock, with identities drawn from seed; restart
// makes it come back empty as a new instance. For the external test that
// compares it with a real redis-server (the test kit's server imports this
// package, so that test cannot live inside it).
func ModelRedis(clock func() time.Time, seed uint64) (hook redis.Hook, restart func()) {
	ids := rand.New(rand.NewPCG(seed, 1))
	m := newRedisModel(clock, func() string { return fmt.Sprintf("%016x%016x%08x", ids.Uint64(), ids.Uint64(), ids.Uint32()) })
	return modelHook{m}, func() { m.restart(nil, false) }
}

// modelHook answers a go-redis client from a redisModel, with no network.
type modelHook struct{ m *redisModel }

func (h modelHook) DialHook(redis.DialHook) redis.DialHook {
	return func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("model: no dialling") }
}

func (h modelHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error {
		v, err := h.m.do(cmd.Args())
		setReply(cmd, v, err)
		return cmd.Err()
	}
}

func (h modelHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(context.Context, []redis.Cmder) error { return errors.New("model: no pipelines") }
}
