package conf

// Keys returns every key path, in Config's order, for tests.
func Keys() []string {
	schema()
	out := make([]string, len(leaves))
	for i, l := range leaves {
		out[i] = l.key
	}
	return out
}

// EnvVar returns a key's environment variable, for tests.
func EnvVar(key string) string {
	schema()
	return leafByKey[key].env
}
