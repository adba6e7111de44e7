package conf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SearchPath returns the files a command reads when no file is named
// (Options.Search), first found wins: ./vesta.yaml, then
// $XDG_CONFIG_HOME/vesta/vesta.yaml ($HOME/.config when XDG_CONFIG_HOME is
// unset or relative, as the XDG base directory specification says), then
// /etc/vesta/vesta.yaml. environ is KEY=value entries; nil is os.Environ().
func SearchPath(environ []string) []string {
	out := []string{"." + string(filepath.Separator) + "vesta.yaml"}
	if dir := xdgDir(environ, "XDG_CONFIG_HOME", ".config"); dir != "" {
		out = append(out, filepath.Join(dir, "vesta", "vesta.yaml"))
	}
	return append(out, filepath.Join(string(filepath.Separator)+"etc", "vesta", "vesta.yaml"))
}

// StateDir returns $XDG_STATE_HOME/vesta ($HOME/.local/state/vesta when
// XDG_STATE_HOME is unset or relative): where a command run by a user
// (vesta gen) keeps its time guard by default. "" when neither is set.
func StateDir(environ []string) string {
	dir := xdgDir(environ, "XDG_STATE_HOME", filepath.Join(".local", "state"))
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "vesta")
}

// xdgDir is the XDG base directory of variable name, or $HOME/fallback;
// "" when neither is an absolute path.
func xdgDir(environ []string, name, fallback string) string {
	if d := getenv(environ, name); filepath.IsAbs(d) {
		return d
	}
	if home := getenv(environ, "HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, fallback)
	}
	return ""
}

// lookupEnv is os.LookupEnv on environ (nil: the process's); the last
// entry of a name wins, as in os/exec.
func lookupEnv(environ []string, name string) (string, bool) {
	if environ == nil {
		return os.LookupEnv(name)
	}
	v, found := "", false
	for _, kv := range environ {
		if s, ok := strings.CutPrefix(kv, name+"="); ok {
			v, found = s, true
		}
	}
	return v, found
}

func getenv(environ []string, name string) string {
	v, _ := lookupEnv(environ, name)
	return v
}

// search returns the first of paths that exists, or "" when none does.
// A path that exists but cannot be examined (a directory in the way, no
// permission) is an error: skipping it would silently read another file.
func search(paths []string) (string, error) {
	for _, p := range paths {
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return "", fmt.Errorf("conf: config file: %w", err)
		case st.IsDir():
			return "", fmt.Errorf("conf: config file: %s is a directory", p)
		}
		return p, nil
	}
	return "", nil
}
