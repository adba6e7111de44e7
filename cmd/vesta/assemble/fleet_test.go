package assemble_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/vesta-go/vesta/cmd/vesta/assemble"
	"github.com/vesta-go/vesta/cmd/vesta/assemble/assembletest"
	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
)

// TestAssembledFleet: three servers assembled on one Redis each list the
// three in GET /v1/fleet, with the addresses they serve on.
func TestAssembledFleet(t *testing.T) {
	as := assembletest.Fleet(t, redistest.Start(t), 3, "vesta", func(cfg *conf.Config) {
		cfg.Machine.Redis.LeaseTTL, cfg.Machine.Redis.MaxClockSkew = 2*time.Second, 20*time.Millisecond
	})
	at := map[uint16]*assemble.Assembled{}
	for _, a := range as {
		at[uint16(a.Generator().Machine())] = a
	}
	for _, a := range as {
		res, err := http.Get("http://" + a.RESTAddr() + "/v1/fleet")
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Store   string `json:"store"`
			Error   string `json:"error"`
			Members []struct {
				Machine uint16 `json:"machine"`
				Self    bool   `json:"self"`
				RPC     string `json:"rpc"`
				HTTP    string `json:"http"`
			} `json:"members"`
		}
		err = json.NewDecoder(res.Body).Decode(&f)
		res.Body.Close()
		if err != nil || f.Store != "redis" || f.Error != "" || len(f.Members) != 3 {
			t.Fatalf("GET /v1/fleet of %s: %+v, %v; want the three from redis", a.RESTAddr(), f, err)
		}
		for _, m := range f.Members {
			b := at[m.Machine]
			if b == nil || m.Self != (a == b) || m.RPC != b.CentralAddr() || m.HTTP != b.RESTAddr() {
				t.Errorf("%s lists %+v", a.RESTAddr(), m)
			}
		}
	}
}
