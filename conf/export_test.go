package conf

import (
	"reflect"
	"strings"
)

// Keys returns every key path, in Config's order, for tests.
func Keys() []string {
	schema()
	out := make([]string, len(leaves))
	for i, l := range leaves {
		out[i] = l.key
	}
	return out
}

// KeyTable is one conversion's table, for tests.
type KeyTable = keyTable

// KeyTables returns every conversion's table, for tests.
func KeyTables() []KeyTable { return keyTables() }

// OwnKeys returns the keys conf reads and checks itself, for tests.
func OwnKeys() map[string]string { return ownKeys }

// KeyType returns the Go type of a key's field in Config, for tests.
func KeyType(key string) reflect.Type {
	schema()
	return leafByKey[key].typ
}

// KeyValue returns the value of key in c, for tests.
func KeyValue(c Config, key string) reflect.Value {
	v := reflect.ValueOf(c)
	for name := range strings.SplitSeq(key, ".") {
		f, ok := sectionField(v.Type(), name)
		if !ok {
			panic("conf: no key " + key)
		}
		v = v.FieldByIndex(f.index)
	}
	return v
}

// EnvText returns key's value in c as the environment writes it, for
// tests.
func EnvText(c Config, key string) string { return leafValue(KeyValue(c, key)).String() }
