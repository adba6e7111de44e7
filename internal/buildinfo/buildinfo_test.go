package buildinfo_test

import (
	"runtime/debug"
	"testing"

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

func TestRead(t *testing.T) {
	if in := buildinfo.Read(); in.Version == "" || in.GoVersion == "" {
		t.Fatalf("Read() = %+v: want a version and a Go version", in)
	}
}

// A program that imports vesta reports vesta's version from its go.mod,
// not its own, and not its own revision; vesta's own build reports both.
func TestFromBuild(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "abcdef0123456789"}, {Key: "vcs.modified", Value: "true"}}
	for _, c := range []struct {
		name    string
		bi      *debug.BuildInfo
		stamped string
		want    buildinfo.Info
	}{
		{"no build info", nil, "", buildinfo.Info{Version: "(devel)"}},
		{"stamped", &debug.BuildInfo{Main: debug.Module{Path: "github.com/vesta-go/vesta", Version: "(devel)"}}, "v1.2.3", buildinfo.Info{Version: "v1.2.3"}},
		{"vesta's checkout", &debug.BuildInfo{Main: debug.Module{Path: "github.com/vesta-go/vesta", Version: "(devel)"}, Settings: vcs},
			"", buildinfo.Info{Version: "(devel)", Revision: "abcdef0123456789", Modified: true}},
		{"go install vesta@v1.4.0", &debug.BuildInfo{Main: debug.Module{Path: "github.com/vesta-go/vesta", Version: "v1.4.0"}},
			"", buildinfo.Info{Version: "v1.4.0"}},
		{"an app importing vesta", &debug.BuildInfo{Main: debug.Module{Path: "example.com/shop", Version: "v9.9.9"}, Settings: vcs,
			Deps: []*debug.Module{{Path: "github.com/vesta-go/vesta", Version: "v1.4.0"}}}, "", buildinfo.Info{Version: "v1.4.0"}},
		{"an app with vesta replaced", &debug.BuildInfo{Main: debug.Module{Path: "example.com/shop"},
			Deps: []*debug.Module{{Path: "github.com/vesta-go/vesta", Version: "v1.4.0", Replace: &debug.Module{Path: "../vesta", Version: ""}}}},
			"", buildinfo.Info{Version: "(devel)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.want.GoVersion = "go1.x"
			if got := buildinfo.FromBuild(c.bi, c.stamped, "go1.x"); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}
