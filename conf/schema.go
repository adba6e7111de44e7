package conf

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// The schema is derived from Config's koanf tags, so a key added to the
// struct is at once known to the file check, the environment and the
// printers.

// field is one tagged field of a section struct.
type field struct {
	name    string // the YAML key within its section, e.g. "lease_ttl"
	index   []int
	typ     reflect.Type
	tag     reflect.StructTag // field and with name its package fields (packages.go)
	section bool              // a nested section (a struct of this package)
}

// leaf is one settable key.
type leaf struct {
	key string // YAML path, e.g. "machine.redis.lease_ttl"
	env string // e.g. "VESTA_MACHINE_REDIS_LEASE_TTL"
	typ reflect.Type
}

const envPrefix = "VESTA_"

var (
	pkgPath = reflect.TypeFor[Config]().PkgPath()

	fieldsCache sync.Map // reflect.Type -> []field

	schemaOnce sync.Once
	leaves     []leaf          // in struct order
	leafByKey  map[string]leaf // by key
	leafPos    map[string]int  // key -> index in leaves
	keyByEnv   map[string]string
)

func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldsCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		name := sf.Tag.Get("koanf")
		if name == "" || !sf.IsExported() {
			continue
		}
		fs = append(fs, field{
			name: name, index: sf.Index, typ: sf.Type, tag: sf.Tag,
			section: sf.Type.Kind() == reflect.Struct && sf.Type.PkgPath() == pkgPath,
		})
	}
	fieldsCache.Store(t, fs)
	return fs
}

func schema() {
	schemaOnce.Do(func() {
		leafByKey = map[string]leaf{}
		leafPos = map[string]int{}
		keyByEnv = map[string]string{}
		eachKey(func(key string, f field) {
			env := envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
			if other, dup := keyByEnv[env]; dup {
				// Keys may hold "_", so two paths could meet in one
				// name; refuse such a Config at once.
				panic(fmt.Sprintf("conf: keys %s and %s share the environment variable %s", other, key, env))
			}
			l := leaf{key: key, env: env, typ: f.typ}
			leaves = append(leaves, l)
			leafByKey[key] = l
			leafPos[key] = len(leaves) - 1
			keyByEnv[env] = key
		})
	})
}

// eachKey calls fn with every key of Config and its field, in Config's
// order.
func eachKey(fn func(key string, f field)) {
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for _, f := range fieldsOf(t) {
			if key := prefix + f.name; f.section {
				walk(key+".", f.typ)
			} else {
				fn(key, f)
			}
		}
	}
	walk("", reflect.TypeFor[Config]())
}

// sectionField finds the field of section type t with YAML name name.
func sectionField(t reflect.Type, name string) (field, bool) {
	for _, f := range fieldsOf(t) {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

// Suggest returns the name of known closest to s, or "" when none is
// close enough to be the intended one: the rule of Load's "did you mean"
// hints, which the command line uses for its flags too.
func Suggest(s string, known []string) string { return suggest(s, known) }

// suggest is Suggest.
func suggest(s string, known []string) string {
	best, bestD := "", len(s)/3+2
	for _, k := range known {
		if d := editDistance(s, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// keyPos orders keys as Config does; a section sorts with its first key.
func keyPos(key string) int {
	if p, ok := leafPos[key]; ok {
		return p
	}
	for i, l := range leaves {
		if strings.HasPrefix(l.key, key+".") {
			return i
		}
	}
	return -1
}

// keyValue is the field of key in v, a Config (settable when v is).
func keyValue(v reflect.Value, key string) reflect.Value {
	for name := range strings.SplitSeq(key, ".") {
		f, ok := sectionField(v.Type(), name)
		if !ok {
			panic("conf: no key " + key)
		}
		v = v.FieldByIndex(f.index)
	}
	return v
}

// EnvName is the VESTA_* variable of a key ("rest.token" →
// VESTA_REST_TOKEN); "" for a key that is not one.
func EnvName(key string) string {
	schema()
	return leafByKey[key].env
}
