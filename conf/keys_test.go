package conf_test

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/conf"
)

// secretType is conf's masked string: a secret key reads a string field.
var secretType = reflect.TypeFor[conf.Secret]()

// TestKeyTable: conf's key tables (packages.go) are the one source of
// the keys. Every key of Config is a row of one table or one of conf's
// own keys, never both; a row's key has its field's Go type and its
// package's default; every key's environment variable is read by Load;
// README's key list holds every key and no other (vesta.example.yaml is
// TestExampleFile's).
func TestKeyTable(t *testing.T) {
	keys := conf.Keys()
	own := conf.OwnKeys()
	row := map[string]conf.KeyTable{}
	for _, tb := range conf.KeyTables() {
		for k := range tb.Fields {
			if _, dup := row[k]; dup && k != "central.max_batch" { // REST's batch is central's too
				t.Errorf("%s: a row of two tables", k)
			}
			row[k] = tb
		}
	}
	for k := range own {
		if !slices.Contains(keys, k) {
			t.Errorf("own key %s is no key of Config", k)
		}
	}
	for k := range row {
		if !slices.Contains(keys, k) {
			t.Errorf("table row %s is no key of Config", k)
		}
	}
	def := conf.DefaultConfig()
	for _, k := range keys {
		tb, inTable := row[k]
		_, isOwn := own[k]
		switch {
		case inTable && isOwn:
			t.Errorf("%s: both a row of %s's table and conf's own", k, tb.Package)
		case !inTable && !isOwn:
			t.Errorf("%s: in no table and not conf's own (packages.go)", k)
		}
		if inTable {
			checkRow(t, k, tb, def)
		}
		checkEnv(t, k, def)
	}

	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readmeKeys(t, string(readme)), keyList(keys); got != want {
		t.Errorf("README's key list:\n%s\nwant:\n%s", got, want)
	}

	// README's list of secrets is every key of conf.Secret's type, each
	// with a _file key beside it.
	var secrets []string
	for _, k := range keys {
		if conf.KeyType(k) == secretType {
			secrets = append(secrets, k)
			if !slices.Contains(keys, k+"_file") {
				t.Errorf("secret %s has no key %s_file", k, k)
			}
		}
	}
	if got := readmeSecrets(t, string(readme)); !slices.Equal(got, secrets) {
		t.Errorf("README's secrets: %q; want %q", got, secrets)
	}
}

// readmeSecrets are the keys of README's "Secrets (...)" sentence.
func readmeSecrets(t *testing.T, readme string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "\nSecrets (")
	if !ok {
		t.Fatal(`README has no "Secrets (" sentence`)
	}
	list, _, _ := strings.Cut(rest, ")")
	var keys []string
	for f := range strings.SplitSeq(list, ",") {
		keys = append(keys, strings.Trim(strings.TrimSpace(f), "`"))
	}
	return keys
}

// checkRow compares a key's type and default with its field's.
func checkRow(t *testing.T, key string, tb conf.KeyTable, def conf.Config) {
	t.Helper()
	fv := reflect.ValueOf(tb.Defaults)
	for name := range strings.SplitSeq(tb.Fields[key], ".") {
		fv = fv.FieldByName(name)
	}
	kv := conf.KeyValue(def, key)
	if kt := conf.KeyType(key); kt == secretType {
		kv = kv.Convert(reflect.TypeFor[string]())
	}
	if kv.Type() != fv.Type() {
		t.Errorf("%s is %v; %s.Config.%s is %v", key, kv.Type(), tb.Package, tb.Fields[key], fv.Type())
		return
	}
	if tb.OwnDefaults {
		return // conf's defaults are the only ones (metrics)
	}
	if (kv.Kind() == reflect.Slice || kv.Kind() == reflect.Map) && kv.Len() == 0 && fv.Len() == 0 {
		return // [] here, nil there: both none
	}
	if !reflect.DeepEqual(kv.Interface(), fv.Interface()) {
		t.Errorf("%s defaults to %v; %s.DefaultConfig().%s is %v: one default, the package's", key, kv, tb.Package, tb.Fields[key], fv)
	}
}

// checkEnv loads key's default from its environment variable.
func checkEnv(t *testing.T, key string, def conf.Config) {
	t.Helper()
	text, want := conf.EnvText(def, key), def
	if key == "machine.id" { // unset by default, which no text says
		text, want.Machine.ID = "5", intp(5)
	}
	name := conf.EnvName(key)
	l, err := conf.Load(conf.Options{Env: []string{name + "=" + text}})
	if err != nil || !slices.Equal(l.Env, []string{name}) || !reflect.DeepEqual(l.Config, want) {
		t.Errorf("%s=%s: %v, applied %v; want the default read back", name, text, err, l.Env)
	}
}

// keyList is the README's list of keys: one line per section, its keys
// in Config's order.
func keyList(keys []string) string {
	var sections []string
	names := map[string][]string{}
	for _, k := range keys {
		i := strings.LastIndexByte(k, '.')
		section := k[:i]
		if names[section] == nil {
			sections = append(sections, section)
		}
		names[section] = append(names[section], k[i+1:])
	}
	var b strings.Builder
	for _, s := range sections {
		b.WriteString(s + ": " + strings.Join(names[s], " ") + "\n")
	}
	return b.String()
}

// readmeKeys is the text block after README's key-list marker.
func readmeKeys(t *testing.T, readme string) string {
	t.Helper()
	const marker = "<!-- every key: conf's TestKeyTable checks this list -->\n```text\n"
	_, rest, ok := strings.Cut(readme, marker)
	if !ok {
		t.Fatalf("README has no line %q", marker)
	}
	block, _, _ := strings.Cut(rest, "```")
	return block
}
