package rest_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/vesta-go/vesta/rest"
)

type openAPIDoc struct {
	OpenAPI string                                `json:"openapi"`
	Paths   map[string]map[string]json.RawMessage `json:"paths"`
}

type openAPIOp struct {
	Security  []map[string][]string `json:"security"`
	Responses map[string]struct {
		Headers map[string]any `json:"headers"`
	} `json:"responses"`
}

// TestOpenAPIMatchesRoutes keeps /openapi.json true: every route echo
// serves is documented, every documented operation is served, and an
// operation is documented as needing the bearer token exactly when the
// server asks for it, as answering 421 to a foreign Host and 403 to a
// cross-site request (on a server without a token) exactly when it does,
// and with Cache-Control on every answer exactly when it sends it.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{Token: token})
	open := newServer(t, gen, rest.Config{})
	var doc openAPIDoc
	body := get(t, s.Handler(), "/openapi.json").Body
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("/openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q, want 3.x", doc.OpenAPI)
	}
	param := regexp.MustCompile(`:([A-Za-z0-9_]+)`)
	served := map[string]bool{}
	for _, r := range s.Handler().(*echo.Echo).Routes() {
		key := strings.ToLower(r.Method) + " " + param.ReplaceAllString(r.Path, "{$1}")
		served[key] = true
	}
	documented := map[string]openAPIOp{}
	for path, ops := range doc.Paths {
		for method, raw := range ops {
			var op openAPIOp
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			documented[method+" "+path] = op
		}
	}
	for _, k := range sortedKeys(served) {
		if _, ok := documented[k]; !ok {
			t.Errorf("route %s is served but not in /openapi.json", k)
		}
	}
	for k, op := range documented {
		if !served[k] {
			t.Errorf("/openapi.json documents %s, which is not served", k)
			continue
		}
		if len(op.Responses) == 0 {
			t.Errorf("%s documents no response", k)
		}
		method, path, _ := strings.Cut(k, " ")
		target := strings.ReplaceAll(path, "{id}", "1")
		r := doHandler(s, req(strings.ToUpper(method), target, "application/json", `{"time":1,"seq":1}`))
		// A security list that holds {} makes the token optional: /metrics,
		// which needs it only with MetricsAuth (TestMetricsAuth).
		secured := len(op.Security) > 0 && !slices.ContainsFunc(op.Security, func(r map[string][]string) bool { return len(r) == 0 })
		if secured != (r.Status == http.StatusUnauthorized) {
			t.Errorf("%s: documented security %v, but without a token the answer is %d", k, op.Security, r.Status)
		}
		noStore := r.Header.Get("Cache-Control") == "no-store"
		for code, resp := range op.Responses {
			if _, ok := resp.Headers["Cache-Control"]; ok != noStore {
				t.Errorf("%s: answer %s documents Cache-Control: %v; the server sends %q", k, code, ok, r.Header.Get("Cache-Control"))
			}
		}
		q := req(strings.ToUpper(method), target, "application/json", `{"time":1,"seq":1}`)
		q.Host = "rebind.attacker.example"
		_, documented := op.Responses["421"]
		if status := doHandler(s, q).Status; documented != (status == http.StatusMisdirectedRequest) {
			t.Errorf("%s: 421 documented: %v, but a foreign Host is answered %d", k, documented, status)
		}
		q = req(strings.ToUpper(method), target, "application/json", `{"time":1,"seq":1}`)
		q.Header.Set("Sec-Fetch-Site", "cross-site")
		_, documented = op.Responses["403"]
		if status := doHandler(open, q).Status; documented != (status == http.StatusForbidden) {
			t.Errorf("%s: 403 documented: %v, but a cross-site request is answered %d", k, documented, status)
		}
	}
	// Every $ref points into the document.
	for _, ref := range regexp.MustCompile(`"\$ref":\s*"#/components/schemas/([A-Za-z]+)"`).FindAllStringSubmatch(body, -1) {
		if !strings.Contains(body, `"`+ref[1]+`": {`) {
			t.Errorf("$ref to missing schema %s", ref[1])
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
