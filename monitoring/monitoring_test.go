package monitoring_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/knadh/koanf/parsers/yaml"

	"github.com/vesta-go/vesta/internal/testkit"
)

const (
	rulesFile     = "rules/vesta.rules.yml"
	rulesTests    = "tests/vesta.test.yml"
	dashboardFile = "grafana/dashboards/vesta.json"
)

func promtool(tb testing.TB, args ...string) string {
	tb.Helper()
	testkit.SkipShort(tb, "promtool")
	path, err := exec.LookPath("promtool")
	if err != nil {
		tb.Fatalf("promtool not found (Debian's prometheus package; scripts/deps.sh installs it): %v", err)
	}
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPromtoolCheckRules(t *testing.T) {
	out := promtool(t, "check", "rules", rulesFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Fatal(out)
	}
}

func TestPromtoolTestRules(t *testing.T) {
	out := promtool(t, "test", "rules", rulesTests)
	if !strings.Contains(out, "SUCCESS") {
		t.Fatal(out)
	}
}

// promtool checks that the files a config names exist: the check runs on a
// copy whose credentials files (secrets of the deployment) are stand-ins,
// beside the rules.
func TestPromtoolCheckConfig(t *testing.T) {
	text := readFile(t, "prometheus.yml")
	dir := t.TempDir()
	stand := filepath.Join(dir, "token")
	if err := os.WriteFile(stand, []byte("stand-in\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cred := regexp.MustCompile(`(?m)^(\s*credentials_file:\s*)\S+$`)
	if !cred.Match(text) {
		t.Fatal("prometheus.yml scrapes without credentials: rest.metrics_auth needs the token")
	}
	text = cred.ReplaceAll(text, []byte("${1}"+stand))
	rules, err := filepath.Abs("rules")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rules, filepath.Join(dir, "rules")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, text, 0o600); err != nil {
		t.Fatal(err)
	}
	out := promtool(t, "check", "config", cfg)
	if !strings.Contains(out, "SUCCESS") || !strings.Contains(out, rulesFile) {
		t.Fatalf("prometheus.yml does not load %s:\n%s", rulesFile, out)
	}
}

// promtool itself fails on a broken rule and on a wrong expectation, so
// the two tests above can fail.
func TestPromtoolCatches(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	writeFile(t, bad, "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: rate(x[5m] > 0\n")
	if out, err := exec.Command("promtool", "check", "rules", bad).CombinedOutput(); err == nil {
		t.Errorf("promtool check rules passed a syntax error:\n%s", out)
	}
	rules, _ := filepath.Abs(rulesFile)
	test := filepath.Join(dir, "test.yml")
	writeFile(t, test, fmt.Sprintf(`rule_files: [%q]
tests:
- interval: 1m
  input_series:
  - {series: 'vesta_generator_fenced{instance="a",job="vesta"}', values: "0x5"}
  alert_rule_test:
  - eval_time: 5m
    alertname: VestaFenced
    exp_alerts: [{exp_labels: {severity: critical, instance: a, job: vesta}}]
`, rules))
	if out, err := exec.Command("promtool", "test", "rules", test).CombinedOutput(); err == nil {
		t.Errorf("promtool test rules passed an alert that cannot fire:\n%s", out)
	}
}

func writeFile(tb testing.TB, path, text string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
}

type rule struct {
	Alert, Expr, For string
	Labels           map[string]string
	Annotations      map[string]string
}

// readFile returns the bytes of the file at path, failing the test when it
// cannot be read.
func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func readYAML(tb testing.TB, path string, v any) {
	tb.Helper()
	m, err := yaml.Parser().Unmarshal(readFile(tb, path))
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	// Through JSON into typed structs: field names are case-insensitive,
	// which suits YAML's lower-case keys.
	js, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(js, v); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
}

func alertRules(tb testing.TB) []rule {
	tb.Helper()
	var rules []rule
	for _, g := range alertGroups(tb) {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		tb.Fatalf("%s: no rules", rulesFile)
	}
	return rules
}

func TestAlertsShape(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range alertRules(t) {
		if r.Alert == "" {
			t.Errorf("a rule that is not an alert: %q", r.Expr)
			continue
		}
		if seen[r.Alert] {
			t.Errorf("%s defined twice", r.Alert)
		}
		seen[r.Alert] = true
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: want a summary and a description", r.Alert)
		}
	}
	// What the monitoring kit's rules must cover.
	for _, a := range []string{"VestaServerDown", "VestaFenced", "VestaLeaseLost", "VestaClockOffsetGrowing",
		"VestaTimeGuardMarkBehind", "VestaTimeGuardFailing", "VestaClientFallback", "VestaCeilingWaits",
		"VestaSegmentStoreErrors", "VestaMachineQuarantineLong", "VestaClientBreakerOpen"} {
		if !seen[a] {
			t.Errorf("no alert %s", a)
		}
	}
}

// Every alert has a unit test in which it fires and one in which it stays
// quiet, so a rule that always or never fires is caught.
func TestEveryAlertUnitTested(t *testing.T) {
	var f struct {
		Tests []struct {
			Name          string
			AlertRuleTest []struct {
				AlertName string
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		}
	}
	readYAML(t, rulesTests, &f)
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range f.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.AlertName] = true
			} else {
				quiet[a.AlertName] = true
			}
		}
	}
	for _, r := range alertRules(t) {
		if !fires[r.Alert] {
			t.Errorf("%s: no unit test in which it fires", r.Alert)
		}
		if !quiet[r.Alert] {
			t.Errorf("%s: no unit test in which it stays quiet", r.Alert)
		}
	}
}

// metric is a row of metrics.txt.
type metric struct {
	name, typ, source string
	labels            []string
}

func catalogue(tb testing.TB) map[string]metric {
	tb.Helper()
	out := map[string]metric{}
	sc := bufio.NewScanner(bytes.NewReader(readFile(tb, "metrics.txt")))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 || !slices.Contains([]string{"counter", "gauge", "histogram"}, f[1]) {
			tb.Fatalf("metrics.txt:%d: want name, counter|gauge|histogram, labels, source: %q", n, line)
		}
		m := metric{name: f[0], typ: f[1], source: f[3]}
		if f[2] != "-" {
			m.labels = strings.Split(f[2], ",")
		}
		if _, dup := out[m.name]; dup {
			tb.Fatalf("metrics.txt:%d: %s listed twice", n, m.name)
		}
		out[m.name] = m
	}
	return out
}

// The catalogue is true to the code: each metric listed with a package is
// named in that package's code (the generator's with the prefix its
// collector adds). Metrics marked pending may be missing until the work
// that adds them lands.
func TestCatalogueMatchesCode(t *testing.T) {
	code := map[string]string{}
	src := func(pkg string) string {
		if s, ok := code[pkg]; ok {
			return s
		}
		files, _ := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		var b strings.Builder
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b.Write(readFile(t, f))
		}
		code[pkg] = b.String()
		return code[pkg]
	}
	var all string // every package's code, read once when needed
	for _, m := range catalogue(t) {
		switch {
		case m.source == "prometheus" || m.source == "client_golang":
			continue
		case m.source == "pending":
			if all == "" {
				all = allCode(t)
			}
			if !strings.Contains(all, `"`+m.name+`"`) {
				t.Logf("%s (%s) is not in the code yet", m.name, m.source)
			}
			continue
		}
		s := src(m.source)
		if s == "" {
			t.Errorf("%s: source package %s has no code", m.name, m.source)
			continue
		}
		want := `"` + m.name + `"`
		if short, ok := strings.CutPrefix(m.name, "vesta_generator_"); ok && m.source == "prommetrics" {
			want = `d("` + short + `"`
		}
		if !strings.Contains(s, want) {
			t.Errorf("%s: package %s does not name it (looked for %s)", m.name, m.source, want)
		}
	}
}

// allCode is the product's Go code, tests left out.
func allCode(tb testing.TB) string {
	tb.Helper()
	var b strings.Builder
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && (strings.HasPrefix(d.Name(), ".") || fileExists(filepath.Join(path, "go.mod"))) {
			return filepath.SkipDir // other modules (tools/peerbench, tools/k8svalidate)
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			text, err := os.ReadFile(path)
			b.Write(text)
			return err
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

var (
	reString    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	reSelector  = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	reMatcher   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	reBraces    = regexp.MustCompile(`\{[^}]*\}`)
	reRange     = regexp.MustCompile(`\[[^\]]*\]`)
	reGrouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	reIdent     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promqlWords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
		"group_left", "group_right", "inf", "nan", "Inf", "NaN"}
)

// selector is one metric named in a PromQL expression, with the labels its
// matchers use.
type selector struct {
	name   string
	labels []string
}

// selectors returns the metrics a PromQL expression reads. It is a
// tokenizer, not a parser (promtool parses): strings, ranges and grouping
// clauses are dropped, function names (followed by "(") and keywords
// skipped, and every other identifier is a metric name.
func selectors(expr string) []selector {
	var out []selector
	// Label names of matchers, before the braces go.
	matchers := map[int][]string{}
	for _, m := range reSelector.FindAllStringSubmatchIndex(expr, -1) {
		var labels []string
		for _, l := range reMatcher.FindAllStringSubmatch(reString.ReplaceAllString(expr[m[4]:m[5]], `""`), -1) {
			labels = append(labels, l[1])
		}
		matchers[m[0]] = labels
	}
	// Keep offsets stable: blank out instead of deleting.
	blank := func(re *regexp.Regexp, s string) string {
		return re.ReplaceAllStringFunc(s, func(m string) string { return strings.Repeat(" ", len(m)) })
	}
	s := blank(reString, expr)
	s = blank(reBraces, s)
	s = blank(reRange, s)
	s = blank(reGrouping, s)
	for _, m := range reIdent.FindAllStringIndex(s, -1) {
		name := s[m[0]:m[1]]
		if m[0] > 0 && strings.ContainsRune("0123456789.$", rune(s[m[0]-1])) {
			continue // the exponent of a number (1e3), a Grafana variable
		}
		if strings.HasPrefix(strings.TrimLeft(s[m[1]:], " \t\n"), "(") || slices.Contains(promqlWords, name) {
			continue // a function, a keyword
		}
		out = append(out, selector{name: name, labels: matchers[m[0]]})
	}
	return out
}

func TestSelectors(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up{job="vesta"} == 0`, []string{"up{job}"}},
		{`histogram_quantile(0.99, sum by (le, mode) (rate(vesta_x_bucket{instance=~"a|b"}[5m]))) > 0.5`, []string{"vesta_x_bucket{instance}"}},
		{`time() - m > 10 and m > 0`, []string{"m", "m"}},
		{`sum by (instance) (rate(a{code=~"5.."}[5m]) or rate(b{code="x}"}[1h])) / 1e3`, []string{"a{code}", "b{code}"}},
		{`count(vesta_client_method == 0) or vector(0)`, []string{"vesta_client_method"}},
		{`abs(deriv(c[30m])) * 3600 > 1`, []string{"c"}},
	} {
		var got []string
		for _, s := range selectors(tc.expr) {
			got = append(got, s.name+map[bool]string{true: "{" + strings.Join(s.labels, ",") + "}", false: ""}[len(s.labels) > 0])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("selectors(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// checkQuery reports metrics and labels of expr that the catalogue does not
// know, and returns the catalogue names it reads.
func checkQuery(t *testing.T, where, expr string, known map[string]metric) []string {
	t.Helper()
	var used []string
	sels := selectors(expr)
	if len(sels) == 0 && !strings.Contains(expr, "vector(") {
		t.Errorf("%s: no metric in %q", where, expr)
	}
	for _, s := range sels {
		m, ok := known[s.name]
		if !ok {
			// A histogram's series.
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, cut := strings.CutSuffix(s.name, suffix); cut && known[base].typ == "histogram" {
					m, ok = known[base], true
					if suffix == "_bucket" {
						m.labels = append(slices.Clone(m.labels), "le")
					}
				}
			}
		}
		if !ok {
			t.Errorf("%s: metric %s is not in metrics.txt (%q)", where, s.name, expr)
			continue
		}
		used = append(used, m.name)
		for _, l := range s.labels {
			// Target labels every scraped series has.
			if l != "instance" && l != "job" && !slices.Contains(m.labels, l) {
				t.Errorf("%s: %s has no label %s (metrics.txt: %v)", where, m.name, l, m.labels)
			}
		}
	}
	return used
}

func TestAlertMetricsKnown(t *testing.T) {
	known := catalogue(t)
	for _, r := range alertRules(t) {
		checkQuery(t, r.Alert, r.Expr, known)
	}
}

type dashboard struct {
	UID, Title string
	Panels     []panel
	Templating struct {
		List []struct {
			Name, Type string
			Definition string
		}
	}
}

type panel struct {
	ID         int
	Type       string
	Title      string
	Datasource *struct{ UID string }
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		RefID string `json:"refId"`
		Expr  string
	}
}

func readDashboard(tb testing.TB) dashboard {
	tb.Helper()
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(readFile(tb, dashboardFile)))
	if err := dec.Decode(&d); err != nil {
		tb.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// grafanaVars stand in for the dashboard's variables so that promtool can
// parse its queries.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*")

func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	known := catalogue(t)
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard uid %q title %q with %d panels", d.UID, d.Title, len(d.Panels))
	}
	shown := map[string]bool{}
	ids := map[int]bool{}
	var exprs []string
	for _, p := range d.Panels {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if ids[p.ID] {
			t.Errorf("%s: id used twice", where)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 || p.GridPos.H <= 0 {
			t.Errorf("%s: gridPos %+v outside the 24 columns", where, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("%s: data source %+v, want the ${datasource} variable", where, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no query", where)
		}
		for _, q := range p.Targets {
			for _, m := range checkQuery(t, where, q.Expr, known) {
				shown[m] = true
			}
			exprs = append(exprs, grafanaVars.Replace(q.Expr))
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			m := regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*),\s*(\w+)\)$`).FindStringSubmatch(v.Definition)
			if m == nil || known[m[1]].name == "" {
				t.Errorf("variable %s: %q is not label_values of a known metric", v.Name, v.Definition)
				continue
			}
			shown[m[1]] = true
		}
	}
	// Every vesta metric is on the dashboard.
	for name := range known {
		if strings.HasPrefix(name, "vesta_") && !shown[name] {
			t.Errorf("metric %s is on no panel", name)
		}
	}

	// Every query parses as PromQL: promtool checks them as recording rules.
	var b strings.Builder
	b.WriteString("groups:\n- name: dashboard\n  rules:\n")
	for i, e := range exprs {
		q, _ := json.Marshal(e)
		fmt.Fprintf(&b, "  - record: dashboard:query_%d\n    expr: %s\n", i, q)
	}
	file := filepath.Join(t.TempDir(), "dashboard.rules.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	promtool(t, "check", "rules", file)
}

// The provisioning files load the dashboard's directory and a data source.
func TestGrafanaProvisioning(t *testing.T) {
	var ds struct {
		Datasources []struct{ Name, Type, URL, UID string }
	}
	readYAML(t, "grafana/provisioning/datasources/prometheus.yml", &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL == "" {
		t.Errorf("data sources %+v", ds.Datasources)
	}
	var dp struct {
		Providers []struct {
			Type    string
			Options struct{ Path string }
		}
	}
	readYAML(t, "grafana/provisioning/dashboards/vesta.yml", &dp)
	if len(dp.Providers) != 1 || dp.Providers[0].Type != "file" || dp.Providers[0].Options.Path != "/var/lib/grafana/dashboards" {
		t.Errorf("dashboard providers %+v", dp.Providers)
	}
}

// group is one group of the rules file.
type group struct {
	Name  string
	Rules []rule
}

// alertGroups is the rules file's groups, in its order.
func alertGroups(tb testing.TB) []group {
	tb.Helper()
	var f struct{ Groups []group }
	readYAML(tb, rulesFile, &f)
	return f.Groups
}

var (
	reAlertRow   = regexp.MustCompile("(?m)^\\| `(Vesta\\w+)` \\| (\\w+) \\|")
	reAlertCount = regexp.MustCompile(`(\d+) alerts in (\d+) groups`)
)

// The docs say what the rules are: deploy.md's table lists every alert
// with its severity, in the rules' order, and every "N alerts in M
// groups" of the README, DESIGN.md, docs/*.md and the design's topic
// pages counts the rules file.
func TestDocsListEveryAlert(t *testing.T) {
	groups := alertGroups(t)
	var want []string
	for _, g := range groups {
		for _, r := range g.Rules {
			want = append(want, r.Alert+" "+r.Labels["severity"])
		}
	}
	deploy := readFile(t, "../docs/deploy.md")
	var got []string
	for _, m := range reAlertRow.FindAllStringSubmatch(string(deploy), -1) {
		got = append(got, m[1]+" "+m[2])
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/deploy.md's alert table (alert severity):\n%s\nwant, as %s has them:\n%s",
			strings.Join(got, "\n"), rulesFile, strings.Join(want, "\n"))
	}

	// docs/design/history's dated notes are records of their day, not
	// kept current: not read.
	pages, _ := filepath.Glob("../docs/*.md")
	design, _ := filepath.Glob("../docs/design/*.md")
	pages = append(append(pages, design...), "../README.md", "../DESIGN.md")
	counted := 0
	for _, p := range pages {
		text := readFile(t, p)
		for _, m := range reAlertCount.FindAllStringSubmatch(string(text), -1) {
			counted++
			if m[1] != strconv.Itoa(len(want)) || m[2] != strconv.Itoa(len(groups)) {
				t.Errorf("%s says %q; %s has %d alerts in %d groups", p, m[0], rulesFile, len(want), len(groups))
			}
		}
	}
	if counted == 0 {
		t.Error(`no page says "N alerts in M groups": the test reads the wrong files`)
	}
}

var (
	reMetricName    = regexp.MustCompile("`(vesta_[a-z_]*[a-z])")
	reCodeMetric    = regexp.MustCompile(`"(vesta_[a-z_]*[a-z])"`)
	reGeneratorName = regexp.MustCompile(`\bd\("([a-z_]+)"`)
)

// The design's metrics table (docs/design/observability.md) names every
// vesta_ metric the product's code registers, and no other: the code
// names each one in a string literal, the generator's without the prefix
// its collector adds.
func TestDesignListsEveryMetric(t *testing.T) {
	const page = "../docs/design/observability.md"
	text := readFile(t, page)
	_, table, _ := strings.Cut(string(text), "| family | metrics |")
	table, _, _ = strings.Cut(table, "\n\n")
	listed := map[string]bool{}
	for _, m := range reMetricName.FindAllStringSubmatch(table, -1) {
		listed[m[1]] = true
	}
	inCode := map[string]bool{}
	for _, m := range reCodeMetric.FindAllStringSubmatch(allCode(t), -1) {
		inCode[m[1]] = true
	}
	gen := readFile(t, "../prommetrics/generator.go")
	for _, m := range reGeneratorName.FindAllStringSubmatch(string(gen), -1) {
		inCode["vesta_generator_"+m[1]] = true
	}
	if len(listed) < 40 || len(inCode) < 40 {
		t.Fatalf("%d metrics in %s's table, %d in the code: the test reads the wrong text", len(listed), page, len(inCode))
	}
	for _, n := range slices.Sorted(maps.Keys(inCode)) {
		if !listed[n] {
			t.Errorf("%s: the code registers %s; the table does not list it", page, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(listed)) {
		if !inCode[n] {
			t.Errorf("%s lists %s; no code names it", page, n)
		}
	}
}
