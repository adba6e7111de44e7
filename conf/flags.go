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

// flagTable is the flag table; a flag's name is what a user types, so it
// is short and friendly rather than the key path.
var flagTable = []Flag{
	{"machine", "machine.id", "machine ID, 0-1023 (default: 1023 for servers, 0 for embedded use)"},
	{"layout", "id.layout", "ID layout: sorted or vesta"},
	{"type", "id.type", "ID type: max-peak, min-granularity, 0 or 1"},
	{"epoch", "id.epoch", `epoch, RFC 3339 (default: the layout's own epoch)`},
	{"servers", "client.servers", "central servers, host:port,..."},
	{"data-dir", "time_guard.dir", `directory of the time guard's mark ("" = none)`},
	{"central-listen", "central.listen", `central RPC server address, host:port ("" = off)`},
	{"rest-listen", "rest.listen", `REST server address, host:port ("" = off)`},
	{"log-level", "log.level", "log level: debug, info, warn or error"},
	{"log-format", "log.format", "log format: text or json"},
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
func Flags() []Flag { return append([]Flag(nil), flagTable...) }

// AddFlags registers the named flags of the table on fs, or all of them
// when no name is given, with the defaults of DefaultConfig for help text
// (Load applies only flags the user set, so the defaults never override a
// file or the environment). It panics on a name not in the table, like
// pflag on a flag defined twice: both are programming errors.
func AddFlags(fs *pflag.FlagSet, names ...string) {
	if len(names) == 0 {
		for _, f := range flagTable {
			names = append(names, f.Name)
		}
	}
	d := DefaultConfig()
	for _, name := range names {
		key, ok := flagKeys[name]
		if !ok {
			panic(fmt.Sprintf("conf: AddFlags: no flag %q in the table", name))
		}
		usage := ""
		for _, f := range flagTable {
			if f.Name == name {
				usage = f.Usage
			}
		}
		switch key {
		case "machine.id":
			fs.Int(name, 0, usage)
		case "id.layout":
			fs.String(name, d.ID.Layout.String(), usage)
		case "id.type":
			fs.String(name, d.ID.Type.String(), usage)
		case "client.servers":
			fs.StringSlice(name, nil, usage)
		case "time_guard.dir":
			fs.String(name, d.TimeGuard.Dir, usage)
		case "central.listen":
			fs.String(name, d.Central.Listen, usage)
		case "rest.listen":
			fs.String(name, d.REST.Listen, usage)
		case "log.level":
			fs.String(name, d.Log.Level, usage)
		case "log.format":
			fs.String(name, d.Log.Format, usage)
		default:
			fs.String(name, "", usage)
		}
	}
}
