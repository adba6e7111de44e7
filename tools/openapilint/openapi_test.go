package openapilint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/rest"
)

// served returns /openapi.json as the REST server serves it.
func served(t *testing.T) []byte {
	t.Helper()
	gen, err := core.New(context.Background(), core.Config{Machine: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gen.Close() })
	s, err := rest.NewServer(gen, rest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rec := httptest.NewRecorder()
	// The server answers its own names only: localhost is one.
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://localhost/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/openapi.json: %d", rec.Code)
	}
	b, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// validate loads doc and validates it strictly: the document, and every
// example, pattern, format and default against its schema.
func validate(doc []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	d, err := loader.LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	return d, d.Validate(context.Background(),
		openapi3.EnableExamplesValidation(),
		openapi3.EnableSchemaPatternValidation(),
		openapi3.EnableSchemaFormatValidation(),
		openapi3.EnableSchemaDefaultsValidation())
}

// TestServedDocumentValidates: the served document passes the validator
// with every example checked against its schema, and holds what a strict
// linter asks for: servers, a license, a security requirement on every
// operation (an empty one on the open routes), and a 4XX (or specific
// 4xx) answer on every operation.
func TestServedDocumentValidates(t *testing.T) {
	d, err := validate(served(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Servers) == 0 {
		t.Error("no servers")
	}
	if d.Info.License == nil || d.Info.License.Name == "" {
		t.Error("no license")
	}
	examples := 0
	for path, item := range d.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if op.Security == nil {
				t.Errorf("%s: no security requirement (want [] on an open route)", where)
			}
			has4xx := false
			for code := range op.Responses.Map() {
				if strings.HasPrefix(code, "4") {
					has4xx = true
				}
			}
			if !has4xx {
				t.Errorf("%s: no 4XX answer", where)
			}
			for _, r := range op.Responses.Map() {
				for _, mt := range r.Value.Content {
					if mt.Example != nil || len(mt.Examples) > 0 {
						examples++
					}
				}
			}
		}
	}
	if examples < 20 {
		t.Errorf("%d response examples; the validator checked too few to mean anything", examples)
	}
}

// TestValidatorCatchesBadExamples: the validation above is strict
// enough to fail: a wrong example in a copy of the document is caught.
func TestValidatorCatchesBadExamples(t *testing.T) {
	var raw map[string]any
	if err := json.Unmarshal(served(t), &raw); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		break_ func(doc map[string]any)
	}{
		{"id example not digits", func(doc map[string]any) {
			op := doc["paths"].(map[string]any)["/v1/ids/{id}"].(map[string]any)["get"].(map[string]any)
			op["parameters"].([]any)[0].(map[string]any)["example"] = "-1"
		}},
		{"error example without code", func(doc map[string]any) {
			r := doc["paths"].(map[string]any)["/v1/id"].(map[string]any)["get"].(map[string]any)["responses"].(map[string]any)["401"].(map[string]any)
			r["content"].(map[string]any)["application/json"].(map[string]any)["example"] = map[string]any{"error": map[string]any{"message": "x"}}
		}},
	} {
		b, _ := json.Marshal(raw)
		var doc map[string]any
		json.Unmarshal(b, &doc)
		tc.break_(doc)
		b, _ = json.Marshal(doc)
		if _, err := validate(b); err == nil {
			t.Errorf("%s: validated", tc.name)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
	}
}
