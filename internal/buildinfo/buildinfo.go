package buildinfo

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// version is stamped by the build:
//
//	go build -ldflags "-X github.com/vesta-go/vesta/internal/buildinfo.version=v1.2.3"
//
// Empty, the module's version is used: "v1.2.3" under go install
// module@v1.2.3 or in a program whose go.mod requires vesta v1.2.3,
// "(devel)" in a checkout.
var version = ""

// Info is what a build knows of itself.
type Info struct {
	// Version is the stamped version, else the module's, else "(devel)".
	Version string `json:"version"`
	// Revision is the VCS commit Go recorded (go build -buildvcs in a
	// git checkout); "" when none was.
	Revision string `json:"revision,omitempty"`
	// Modified: the checkout had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"go_version"`
}

// modulePath is vesta's module: in a program that imports vesta as a
// library, the build's main module is that program, and vesta's version
// is the one its go.mod requires.
const modulePath = "github.com/vesta-go/vesta"

var read = sync.OnceValue(func() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(bi, version, runtime.Version())
})

// fromBuild is the Info of a build: the stamped version, else vesta's
// module version; the VCS revision only when vesta is the main module
// (else it is the importing program's).
func fromBuild(bi *debug.BuildInfo, stamped, goVersion string) Info {
	in := Info{Version: stamped, GoVersion: goVersion}
	if bi != nil && bi.Main.Path != "" && bi.Main.Path != modulePath {
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				if d.Replace != nil {
					d = d.Replace
				}
				if in.Version == "" {
					in.Version = d.Version
				}
			}
		}
		bi = nil
	}
	if bi != nil {
		if in.Version == "" && bi.Main.Version != "" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	return in
}

// Read is this binary's build information.
func Read() Info { return read() }

// String is the version with the short revision: "v1.2.3",
// "v1.2.3 (1a2b3c4d5e6f)", "(devel) (1a2b3c4d5e6f, modified)".
func (in Info) String() string {
	s := in.Version
	if in.Revision != "" {
		r := in.Revision
		if len(r) > 12 {
			r = r[:12]
		}
		if in.Modified {
			r += ", modified"
		}
		s += " (" + r + ")"
	}
	return s
}
