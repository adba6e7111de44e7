package conf

import (
	"reflect"
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
func KeyValue(c Config, key string) reflect.Value { return keyValue(reflect.ValueOf(c), key) }

// EnvText returns key's value in c as the environment writes it, for
// tests.
func EnvText(c Config, key string) string { return leafValue(KeyValue(c, key)).String() }

// Converted returns c converted, without the checks, into the Config of a
// key table's package (KeyTable.Package), for tests.
func Converted(c Config, pkg string) any {
	switch pkg {
	case "core":
		return c.coreConfig()
	case "embed":
		return c.embedConfig()
	case "central":
		return c.centralConfig()
	case "rest":
		return c.restConfig()
	case "connlimit":
		return c.metricsConfig()
	case "client":
		return c.clientConfig()
	case "machineid":
		return c.Machine.machineID()
	case "segment":
		return c.segmentConfig()
	case "mysqlstore":
		return c.segmentMySQLConfig()
	case "redisstore":
		return c.segmentRedisConfig()
	}
	panic("conf: no conversion to " + pkg)
}
