package conf

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Flag ties a command-line flag to the key it sets.
type Flag struct {
	Name  string // without dashes, e.g. "machine"
	Key   string // e.g. "machine.id"
	Usage string
}

// flagDef is a Flag and how to register it: its type, and its default
// (from DefaultConfig) for the help text.
type flagDef struct {
	Flag
	add func(fs *pflag.FlagSet, f Flag, d Config)
}

func stringFlag(get func(Config) string) func(*pflag.FlagSet, Flag, Config) {
	return func(fs *pflag.FlagSet, f Flag, d Config) { fs.String(f.Name, get(d), f.Usage) }
}

// flagTable: a flag's name is what a user types, so it is short and
// friendly rather than the key path.
var flagTable = []flagDef{
	{Flag{"machine", "machine.id", "machine ID, 0-1023, unique to this instance (no default: choose one, or use machine.providers etcd, redis, k8s or iptable)"},
		func(fs *pflag.FlagSet, f Flag, _ Config) { fs.Int(f.Name, 0, f.Usage) }},
	{Flag{"layout", "id.layout", "ID layout: sorted, vesta or leaf"},
		stringFlag(func(d Config) string { return d.ID.Layout.String() })},
	{Flag{"type", "id.type", "ID type: max-peak, min-granularity, 0 or 1"},
		stringFlag(func(d Config) string { return d.ID.Type.String() })},
	{Flag{"epoch", "id.epoch", "epoch, RFC 3339 (default: the layout's own epoch)"},
		stringFlag(func(Config) string { return "" })},
	{Flag{"servers", "client.servers", "central servers, host:port,..."},
		func(fs *pflag.FlagSet, f Flag, _ Config) { fs.StringSlice(f.Name, nil, f.Usage) }},
	{Flag{"data-dir", "time_guard.dir", `directory of the time guard's mark ("" = none)`},
		stringFlag(func(d Config) string { return d.TimeGuard.DataDir })},
	{Flag{"central-listen", "central.listen", `central RPC server address, host:port ("" = off)`},
		stringFlag(func(d Config) string { return d.Central.Listen })},
	{Flag{"rest-listen", "rest.listen", `REST server address, host:port ("" = off)`},
		stringFlag(func(d Config) string { return d.REST.Listen })},
	{Flag{"log-level", "log.level", "log level: debug, info, warn or error"},
		stringFlag(func(d Config) string { return d.Log.Level })},
	{Flag{"log-format", "log.format", "log format: text or json"},
		stringFlag(func(d Config) string { return d.Log.Format })},
}

var flagKeys = func() map[string]string {
	m := make(map[string]string, len(flagTable))
	for _, f := range flagTable {
		m[f.Name] = f.Key
	}
	return m
}()

// Flags returns the flag table: the flags Load applies and the keys they
// set. The slice is a copy.
func Flags() []Flag {
	out := make([]Flag, len(flagTable))
	for i, f := range flagTable {
		out[i] = f.Flag
	}
	return out
}

// AddFlags registers the named flags of the table on fs, or all of them
// when no name is given, with the defaults of DefaultConfig for the help
// text (Load applies only flags the user set, so these defaults never
// override a file or the environment). It panics on a name not in the
// table, as pflag does on a flag defined twice: both are programming
// errors.
func AddFlags(fs *pflag.FlagSet, names ...string) {
	d := DefaultConfig()
	if len(names) == 0 {
		for _, f := range flagTable {
			f.add(fs, f.Flag, d)
		}
		return
	}
	for _, name := range names {
		i := -1
		for j, f := range flagTable {
			if f.Name == name {
				i = j
			}
		}
		if i < 0 {
			panic(fmt.Sprintf("conf: AddFlags: no flag %q in the table", name))
		}
		flagTable[i].add(fs, flagTable[i].Flag, d)
	}
}
