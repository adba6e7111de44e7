package buildinfo_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vesta-go/vesta/internal/buildinfo"
)

func TestString(t *testing.T) {
	for _, c := range []struct {
		in   buildinfo.Info
		want string
	}{
		{buildinfo.Info{Version: "v1.2.3"}, "v1.2.3"},
		{buildinfo.Info{Version: "v1.2.3", Revision: "1a2b3c4d5e6f7a8b"}, "v1.2.3 (1a2b3c4d5e6f)"},
		{buildinfo.Info{Version: "(devel)", Revision: "1a2b3c", Modified: true}, "(devel) (1a2b3c, modified)"},
	} {
		if got := c.in.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.in, got, c.want)
		}
	}
}

func TestReadAndMetric(t *testing.T) {
	in := buildinfo.Read()
	if in.Version == "" || in.GoVersion == "" {
		t.Fatalf("Read() = %+v: want a version and a Go version", in)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := buildinfo.Register(reg); err != nil {
		t.Fatal(err)
	}
	want := `# HELP vesta_build_info The running build: always 1, with its version, VCS revision and Go version as labels.
# TYPE vesta_build_info gauge
vesta_build_info{goversion="` + in.GoVersion + `",revision="` + in.Revision + `",version="` + in.Version + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "vesta_build_info"); err != nil {
		t.Error(err)
	}
}
