package nettest_test

import (
	"net"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit/nettest"
)

func TestDeadAddrRefuses(t *testing.T) {
	addr := nettest.DeadAddr(t)
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		c.Close()
		t.Fatalf("dial %s succeeded; want refused", addr)
	}
}
