package openapilint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	baselinter "github.com/speakeasy-api/openapi/linter"
	"github.com/speakeasy-api/openapi/openapi"
	oaslinter "github.com/speakeasy-api/openapi/openapi/linter"
	"github.com/speakeasy-api/openapi/validation"
)

// raised are rules outside the recommended ruleset, or hints in it, that
// the document is held to as warnings: what a reader of the document
// looks for first (its license, a contact, its tags declared).
var raised = []string{
	"style-license-url",
	"style-info-contact",
	"style-openapi-tags",
	"style-operation-tag-defined",
	"style-tag-description",
}

// lint runs speakeasy's OpenAPI linter with its recommended ruleset
// (semantic rules, the essential style rules and the basic OWASP security
// rules) and the raised rules, and returns its errors and warnings
// (problems: the document must have none) and its hints.
func lint(tb testing.TB, doc []byte) (problems, hints []*validation.Error) {
	tb.Helper()
	ctx := context.Background()
	d, verrs, err := openapi.Unmarshal(ctx, bytes.NewReader(doc))
	if err != nil {
		tb.Fatalf("load: %v", err)
	}
	cfg := baselinter.NewConfig()
	cfg.Extends = []string{"recommended"}
	warning := validation.SeverityWarning
	for _, id := range raised {
		cfg.Rules = append(cfg.Rules, baselinter.RuleEntry{ID: id, Severity: &warning})
	}
	l, err := oaslinter.NewLinter(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := l.Lint(ctx, baselinter.NewDocumentInfo(d, "openapi.json"), verrs, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range out.Results {
		var v *validation.Error
		if !errors.As(r, &v) {
			tb.Errorf("not a lint result: %v", r)
			continue
		}
		if v.Severity == validation.SeverityHint {
			hints = append(hints, v)
		} else {
			problems = append(problems, v)
		}
	}
	return problems, hints
}

// TestServedDocumentLintsClean: the served document has no error and no
// warning under the strict linter; hints are shown, not failed.
func TestServedDocumentLintsClean(t *testing.T) {
	problems, hints := lint(t, served(t))
	for _, p := range problems {
		t.Errorf("%s", p)
	}
	t.Logf("%d hints (not failed)", len(hints))
}

// TestLinterCatches: the lint above can fail: each break of a copy of the
// document is an error or a warning.
func TestLinterCatches(t *testing.T) {
	for _, tc := range []struct {
		name, rule string
		break_     func(doc map[string]any)
	}{
		{"nullable without a type", "oas3-nullable-without-type", func(doc map[string]any) {
			lease := schema(doc, "ServerStatus")["properties"].(map[string]any)["lease"].(map[string]any)
			delete(lease, "type")
		}},
		{"license without its URL", "style-license-url", func(doc map[string]any) {
			delete(doc["info"].(map[string]any)["license"].(map[string]any), "url")
		}},
		{"a plain-HTTP server", "owasp-security-hosts-https-oas3", func(doc map[string]any) {
			doc["servers"].([]any)[0].(map[string]any)["url"] = "http://{host}"
		}},
		{"an undeclared tag", "style-operation-tag-defined", func(doc map[string]any) {
			op := doc["paths"].(map[string]any)["/v1/info"].(map[string]any)["get"].(map[string]any)
			op["tags"] = []any{"nowhere"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(served(t), &doc); err != nil {
				t.Fatal(err)
			}
			tc.break_(doc)
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			problems, _ := lint(t, b)
			for _, p := range problems {
				if p.Rule == tc.rule {
					t.Logf("caught: %s", p)
					return
				}
			}
			t.Errorf("no %s among %d problems: %v", tc.rule, len(problems), problems)
		})
	}
}

func schema(doc map[string]any, name string) map[string]any {
	return doc["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any)
}
