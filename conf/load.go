package conf

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"

	kmaps "github.com/knadh/koanf/maps"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/machineid"
)

// EnvFile names the environment variable holding the config file's path,
// read when Options.File is "" (a --config flag wins over it).
const EnvFile = "VESTA_CONFIG"

// Options says where Load reads from.
type Options struct {
	// File is the YAML file read first. "" reads the file VESTA_CONFIG
	// names when that is set (set to "", none), else the first of Search
	// that exists, else none. A file that is named must exist.
	File string
	// NoFile reads no file, whatever File, VESTA_CONFIG and Search say:
	// a command line's --config ''.
	NoFile bool
	// Search are the files tried, in order, when no file is named (see
	// SearchPath); nil tries none.
	Search []string
	// Env is the environment as KEY=value entries, of which the VESTA_*
	// ones are read; nil is os.Environ() (pass an empty slice for none).
	Env []string
	// Flags are the parsed command-line flags, read last; nil reads none.
	// Only flags of the flag table (Flags) that the user set apply; other
	// flags of the set are left to the caller.
	Flags *pflag.FlagSet
}

// Loaded is a loaded Config and where its values came from.
type Loaded struct {
	Config Config
	// File is the YAML file read, or "".
	File string
	// Found: File was not named but found on Options.Search.
	Found bool
	// Env are the VESTA_* variables applied, sorted.
	Env []string
	// Flags are the flags applied, without dashes, sorted.
	Flags []string

	origin map[string]string // key -> "file F" / "env V" / "flag --F" / "K_file F"
}

// Source says where key's value came from: "file vesta.yaml", "env
// VESTA_MACHINE_ID", "flag --machine", "rest.token_file /run/token"; ""
// for the default.
func (l Loaded) Source(key string) string { return l.origin[key] }

// Attribute names, in each *KeyError of err that says no source, where
// its key's value came from (see Source), so an error of a later check
// (RequireMachine, a package refusing the converted Config) names the
// flag, variable or file a user set. It returns err.
func (l Loaded) Attribute(err error) error {
	for _, e := range KeyErrors(err) {
		if e.Source == "" {
			e.Source = l.origin[e.Key]
		}
	}
	return err
}

// Defaults reports that nothing was given (no file, no VESTA_* variable,
// no flag): the Config is DefaultConfig().
func (l Loaded) Defaults() bool {
	return l.File == "" && len(l.Env) == 0 && len(l.Flags) == 0
}

// Sources lists what was read, for a start-up log line, e.g.
// ["file vesta.yaml", "env VESTA_ID_LAYOUT", "flag --machine"].
func (l Loaded) Sources() []string {
	var out []string
	if l.File != "" {
		out = append(out, "file "+l.File)
	}
	for _, e := range l.Env {
		out = append(out, "env "+e)
	}
	for _, f := range l.Flags {
		out = append(out, "flag --"+f)
	}
	return out
}

// Load reads DefaultConfig(), then opts.File, then the VESTA_* variables
// of opts.Env, then the set flags of opts.Flags, each overriding the one
// before, reads the secret files and validates the result. Every unknown
// key and invalid value is reported at once: the error joins *KeyError
// values (see KeyErrors) and matches ErrConfig. A file that cannot be
// read or parsed is reported alone. On error the Loaded is zero.
func Load(opts Options) (Loaded, error) {
	schema()
	l := &loader{origin: map[string]string{}}
	ko := koanf.New(".")

	environ := opts.Env
	if environ == nil {
		environ = os.Environ()
	}
	found := false
	switch v, named := lookupEnv(environ, EnvFile); {
	case opts.NoFile:
		opts.File = ""
	case opts.File != "":
	case named:
		opts.File = v
	default:
		var err error
		if opts.File, err = search(opts.Search); err != nil {
			return Loaded{}, err
		}
		found = opts.File != ""
	}
	if opts.File != "" {
		err := ko.Load(file.Provider(opts.File), yaml.Parser(), koanf.WithMergeFunc(l.mergeFile("file "+opts.File)))
		if err != nil {
			if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
				return Loaded{}, fmt.Errorf("conf: config file: %w", err)
			}
			return Loaded{}, fmt.Errorf("%w: config file %s: %w", ErrConfig, opts.File, err)
		}
	}

	err := ko.Load(env.Provider(".", env.Opt{
		Prefix:        envPrefix,
		TransformFunc: l.envKey,
		EnvironFunc:   func() []string { return environ },
	}), nil, koanf.WithMergeFunc(mergePlain))
	if err != nil {
		return Loaded{}, fmt.Errorf("conf: environment: %w", err)
	}

	if opts.Flags != nil {
		err := ko.Load(posflag.ProviderWithFlag(opts.Flags, ".", nil, l.flagKey(opts.Flags)), nil,
			koanf.WithMergeFunc(mergePlain))
		if err != nil {
			return Loaded{}, fmt.Errorf("conf: flags: %w", err)
		}
	}

	cfg := DefaultConfig()
	err = ko.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{Tag: "koanf", DecoderConfig: decoderConfig()})
	l.decodeErrors(err, ko.Raw())
	// The leaf layout counts milliseconds only, so id.layout: leaf alone
	// suffices; an id.type given as max-peak is refused by Validate.
	if cfg.ID.Layout == core.Leaf && !ko.Exists("id.type") {
		cfg.ID.Type = core.MinGranularity
	}
	l.machineOutranked(cfg.Machine)
	l.readSecret(&cfg.Machine.Redis.Password, &cfg.Machine.Redis.PasswordFile, "machine.redis.password")
	l.readSecret(&cfg.Machine.Etcd.Password, &cfg.Machine.Etcd.PasswordFile, "machine.etcd.password")
	l.readSecret(&cfg.REST.Token, &cfg.REST.TokenFile, "rest.token")
	l.readSecret(&cfg.Segment.DSN, &cfg.Segment.DSNFile, "segment.dsn")
	l.readSecret(&cfg.Segment.Redis.Password, &cfg.Segment.Redis.PasswordFile, "segment.redis.password")
	l.readSecret(&cfg.Mask.Key, &cfg.Mask.KeyFile, "mask.key")

	errs := append(l.errs, KeyErrors(cfg.Validate())...)
	// Unknown keys first (a typo explains what follows), then in key order.
	slices.SortStableFunc(errs, func(a, b *KeyError) int {
		if a.unknown || b.unknown {
			return boolOrder(b.unknown) - boolOrder(a.unknown)
		}
		return keyPos(a.Key) - keyPos(b.Key)
	})
	for _, e := range errs {
		if e.Source == "" {
			e.Source = l.origin[e.Key]
		}
	}
	if len(errs) > 0 {
		joined := make([]error, len(errs))
		for i, e := range errs {
			joined[i] = e
		}
		return Loaded{}, errors.Join(joined...)
	}
	out := Loaded{Config: cfg, File: opts.File, Found: found, Env: l.env, Flags: l.flags, origin: l.origin}
	sort.Strings(out.Env)
	sort.Strings(out.Flags)
	return out, nil
}

// loader collects, while the sources are read, the errors and where each
// key's value came from.
type loader struct {
	errs   []*KeyError
	origin map[string]string // key -> "file F" / "env V" / "flag --F"
	env    []string
	flags  []string
}

func (l *loader) fail(key, source, format string, args ...any) {
	l.errs = append(l.errs, &KeyError{Key: key, Msg: fmt.Sprintf(format, args...), Source: source})
}

// mergeFile records where each of the file's keys came from; unknown
// keys are left for the decoder (ErrorUnused) to report.
func (l *loader) mergeFile(source string) func(src, dest map[string]any) error {
	return func(src, dest map[string]any) error {
		l.recordOrigin(src, "", source)
		kmaps.Merge(src, dest)
		return nil
	}
}

func mergePlain(src, dest map[string]any) error {
	kmaps.Merge(src, dest)
	return nil
}

func (l *loader) recordOrigin(m map[string]any, prefix, source string) {
	for name, v := range m {
		l.origin[prefix+name] = source
		if sub, ok := v.(map[string]any); ok {
			l.recordOrigin(sub, prefix+name+".", source)
		}
	}
}

// envKey maps VESTA_MACHINE_REDIS_LEASE_TTL to machine.redis.lease_ttl by
// the table of known keys (keys hold "_", so the name cannot simply be
// split); an unknown variable is an error naming it, never its value.
func (l *loader) envKey(name, value string) (string, any) {
	if name == EnvFile || testHookEnv(name) {
		return "", nil // the file's path, or a test build's hook: not a key
	}
	key, ok := keyByEnv[name]
	if !ok {
		envs := make([]string, 0, len(keyByEnv))
		for e := range keyByEnv {
			envs = append(envs, e)
		}
		slices.Sort(envs)
		msg := "unknown environment variable"
		if s := suggest(name, envs); s != "" {
			msg += "; did you mean " + s + "?"
		}
		l.errs = append(l.errs, &KeyError{Key: clip(name), Msg: msg, unknown: true})
		return "", nil
	}
	l.origin[key] = "env " + name
	l.env = append(l.env, name)
	return key, value
}

// flagKey maps the set flags of the flag table to their keys.
func (l *loader) flagKey(fs *pflag.FlagSet) func(f *pflag.Flag) (string, any) {
	return func(f *pflag.Flag) (string, any) {
		key, ok := flagKeys[f.Name]
		if !ok || !f.Changed {
			return "", nil
		}
		l.origin[key] = "flag --" + f.Name
		l.flags = append(l.flags, f.Name)
		return key, posflag.FlagVal(fs, f)
	}
}

// readSecret fills *secret from *path, when set.
func (l *loader) readSecret(secret *Secret, path *string, key string) {
	if *path == "" {
		return
	}
	fileKey := key + "_file"
	if *secret != "" {
		l.fail(fileKey, "", "set together with %s; set one of them", key)
		return
	}
	b, err := readSmallFile(*path)
	if err != nil {
		// The error names the path, never the content.
		l.fail(fileKey, "", "%v", err)
		return
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		l.fail(fileKey, "", "%q is empty", *path)
		return
	}
	*secret = Secret(s)
	l.origin[key] = fileKey + " " + *path // what a refusal of the secret names
}

// machineOutranked refuses a machine.id that the providers would not use
// while it was set above them (a --machine or VESTA_MACHINE_ID over a
// file's machine.providers: redis): a file found on the search path, or
// shared by a fleet, must not silently replace the machine ID a user
// chose. Both from one source, the order is that source's own choice (a
// static fallback after a lease).
func (l *loader) machineOutranked(m MachineConfig) {
	if m.ID == nil || len(m.Providers) == 0 || m.Providers[0] == machineid.ProviderStatic {
		return
	}
	idSrc, pSrc := l.origin["machine.id"], l.origin["machine.providers"]
	if sourceRank(idSrc) <= sourceRank(pSrc) {
		return
	}
	l.fail("machine.id", idSrc, "%d would not be used: machine.providers %s (%s) tries %s first, which would choose another machine ID; "+
		"list static first (machine.providers static) to use this one, or leave machine.id unset to use the lease",
		*m.ID, strings.Join(m.Providers, ","), pSrc, m.Providers[0])
}

// sourceRank orders sources by precedence: a flag over the environment
// over the file over the default.
func sourceRank(source string) int {
	for i, prefix := range []string{"file ", "env ", "flag "} {
		if strings.HasPrefix(source, prefix) {
			return i + 1
		}
	}
	return 0
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

// maxSecretBytes bounds a secret file: a path mistyped to a large file
// (or a device) fails instead of filling memory.
const maxSecretBytes = 64 << 10

func readSmallFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSecretBytes {
		return nil, fmt.Errorf("%q is larger than %d KiB; want a file holding only the secret", path, maxSecretBytes>>10)
	}
	return b, nil
}
