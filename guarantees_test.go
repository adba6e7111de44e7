package vesta_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vesta-go/vesta/conf"
	"github.com/vesta-go/vesta/machineid"
)

// designPages hold the design's side of the not-survived names: the
// topic page that gives each case's reason.
var designPages = []string{"docs/design/not-survived.md"}

// guaranteesPage holds the operator's side, one table per store and mode
// under its heading.
const guaranteesPage = "docs/guarantees.md"

// notSurvived reads the names of a page's not-survived tables: the
// backquoted first cell of each row of a table whose header begins
// "| not survived |", by the "### " heading above the table.
func notSurvived(t *testing.T, path string) (names []string, byHeading map[string][]string) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z0-9-]+)` \\|")
	byHeading = map[string][]string{}
	heading, inTable := "", false
	for line := range strings.Lines(string(text)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "#"):
			heading, inTable = strings.TrimSpace(strings.TrimLeft(line, "#")), false
		case strings.HasPrefix(line, "| not survived |"):
			inTable = true
		case inTable && strings.HasPrefix(line, "|---"):
		case inTable && strings.HasPrefix(line, "|"):
			m := row.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("%s: a not-survived row without a `short-name` first: %q", path, line)
				continue
			}
			if slices.Contains(names, m[1]) {
				t.Errorf("%s: %s named twice", path, m[1])
			}
			names = append(names, m[1])
			byHeading[heading] = append(byHeading[heading], m[1])
		default:
			inTable = false
		}
	}
	return names, byHeading
}

// The guarantees page says, for every store and mode, what is not
// survived, and the design gives each of those a reason under the same
// name: every machine-ID provider, every segment store and the leaf
// layout have a heading of their own with at least one row, and the two
// pages hold the same names. The prose may change freely; the names are
// what links them.
func TestNotSurvivedTables(t *testing.T) {
	names, byHeading := notSurvived(t, guaranteesPage)
	if len(names) == 0 {
		t.Fatalf("%s: no not-survived table found", guaranteesPage)
	}
	covered := func(prefix, what string) {
		t.Helper()
		for h, rows := range byHeading {
			if strings.HasPrefix(h, prefix) && strings.Contains(h, "`"+what+"`") && len(rows) > 0 {
				return
			}
		}
		t.Errorf("%s: no heading %q… naming `%s` with a not-survived row", guaranteesPage, prefix, what)
	}
	for _, p := range machineid.Providers() {
		covered("Machine IDs:", p)
	}
	for _, s := range []string{conf.SegmentStoreMySQL, conf.SegmentStoreRedis} {
		covered("Segment store", s)
	}
	covered("Layout", "leaf")

	var design []string
	for _, p := range designPages {
		n, _ := notSurvived(t, p)
		design = append(design, n...)
	}
	for _, n := range names {
		if !slices.Contains(design, n) {
			t.Errorf("%s names %s; %v do not", guaranteesPage, n, designPages)
		}
	}
	for _, n := range design {
		if !slices.Contains(names, n) {
			t.Errorf("%v name %s; %s does not", designPages, n, guaranteesPage)
		}
	}
}
