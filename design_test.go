package vesta_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// designMaxLines bounds DESIGN.md: the promises, one picture and the map;
// the arguments live on the topic pages.
const designMaxLines = 300

// DESIGN.md is short and maps every topic page of docs/design, one line
// each, so that a page added is a page found.
func TestDesignMapsEveryPage(t *testing.T) {
	text, err := os.ReadFile("DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n > designMaxLines {
		t.Errorf("DESIGN.md is %d lines; at most %d: move the argument to its topic page", n, designMaxLines)
	}
	pages, err := filepath.Glob("docs/design/*.md")
	if err != nil || len(pages) < 10 {
		t.Fatalf("docs/design: %d pages, %v", len(pages), err)
	}
	for _, p := range pages {
		if filepath.Base(p) == "README.md" {
			continue
		}
		if !strings.Contains(string(text), "\n- ["+filepath.Base(p)+"]("+p+"):") {
			t.Errorf("DESIGN.md's map has no line for %s (want `- [%s](%s): what it holds`)", p, filepath.Base(p), p)
		}
	}
}

// sectionCite is a citation of the design by section number, which the
// design no longer has: pages are cited by path and anchor.
var sectionCite = regexp.MustCompile(`§\s*\d`)

// No comment, test or doc cites the design by a section number. The dated
// records are exempt: docs/design/history and the long run's recorded
// report and log are kept as written.
func TestNoSectionNumbers(t *testing.T) {
	skip := map[string]bool{".git": true, "docs/design/history": true, "docs/reliability": true}
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skip[filepath.ToSlash(path)] || (path != "." && strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".yaml", ".yml", ".txt", ".sh":
		default:
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, line := range strings.Split(string(text), "\n") {
			if sectionCite.MatchString(line) {
				t.Errorf("%s:%d cites a section number: %q; cite the topic page (docs/design/…md#anchor)", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files: the walk missed the repository", checked)
	}
}
