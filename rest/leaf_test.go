package rest_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/rest"
)

// javaLong is what a Java client of Leaf does with an answer: check for
// 200, then Long.parseLong of the body as read. parseLong trims nothing
// (a newline or space is a NumberFormatException) and takes an optional
// sign and digits within a long, which is strconv.ParseInt base 10 of the
// exact body, for the ASCII bodies servers send.
func javaLong(t *testing.T, r response) int64 {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("HTTP %d, want 200; body %q", r.Status, r.Body)
	}
	v, err := strconv.ParseInt(r.Body, 10, 64)
	if err != nil {
		t.Fatalf("Long.parseLong(%q) would throw: %v", r.Body, err)
	}
	return v
}

// httpURLConnectionAccept is the Accept header Java's HttpURLConnection
// sends when the caller sets none.
const httpURLConnectionAccept = "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2"

// TestLeafJavaClient drives Leaf's two ID routes as Leaf's Java clients
// call them, in-process and over TCP. Leaf's behaviour, file by file:
//   - LeafController: @RequestMapping("/api/segment/get/{key}") and
//     ("/api/snowflake/get/{key}") name no method, so Spring (4.3.18, of
//     leaf-server's Spring Boot 1.5.18) maps every method to them; its
//     RequestMappingHandlerMapping matches a trailing slash
//     (useTrailingSlashMatch, true by default).
//   - The handlers return String.valueOf(id): Spring's
//     StringHttpMessageConverter, first of the converters and writing any
//     media type, writes it with the type Accept negotiates, so Accept:
//     application/json answers application/json;charset=UTF-8 (Spring
//     Boot's UTF-8) with the bare number, and no Accept text/plain.
func TestLeafJavaClient(t *testing.T) {
	s, _, _ := seqServer(t, "leaf-segment-test")
	accepts := []struct{ accept, ctype string }{
		{"", "text/plain"},
		{"application/json", "application/json;charset=UTF-8"},
		{"application/json, text/plain, */*", "application/json;charset=UTF-8"},
		{"text/plain;q=0.5, application/json", "application/json;charset=UTF-8"},
		{"*/*", "text/plain"},
		{httpURLConnectionAccept, "text/plain"},
	}
	for _, c := range callers(t, s) {
		t.Run(c.name, func(t *testing.T) {
			last := int64(0)
			for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
				for _, path := range []string{"/api/segment/get/leaf-segment-test", "/api/snowflake/get/any"} {
					for _, slash := range []string{"", "/"} {
						for _, a := range accepts {
							body := ""
							if method != http.MethodGet {
								body = "key=ignored" // Leaf reads no body
							}
							q := req(method, path+slash, "application/x-www-form-urlencoded", body)
							if a.accept != "" {
								q.Header.Set("Accept", a.accept)
							}
							r := c.do(t, q)
							v := javaLong(t, r)
							if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, a.ctype) {
								t.Fatalf("%s %s%s Accept %q: Content-Type %q, want %q", method, path, slash, a.accept, ct, a.ctype)
							}
							if r.Header.Get("Cache-Control") != "no-store" {
								t.Fatalf("%s %s%s: Cache-Control %q", method, path, slash, r.Header.Get("Cache-Control"))
							}
							if v < 1 {
								t.Fatalf("%s %s%s: %d", method, path, slash, v)
							}
							if strings.HasPrefix(path, "/api/segment/") {
								if v <= last {
									t.Fatalf("%s %s%s: %d after %d", method, path, slash, v, last)
								}
								last = v
							}
						}
					}
				}
			}
		})
	}
}

// TestLeafRoutingEdges: what Spring's mapping does not take stays
// refused, and routing never consumes a number it does not answer.
func TestLeafRoutingEdges(t *testing.T) {
	s, _, _ := seqServer(t, "t")
	h := s.Handler()
	first := javaLong(t, get(t, h, "/api/segment/get/t"))
	// No key, an extra segment, two slashes: no route, as in leaf-server
	// (Spring's {key} is one path segment and must not be empty), for
	// either route and any method.
	for _, p := range []string{"/api/segment/get/", "/api/segment/get//", "/api/segment/get/t/x", "/api/segment/get/t//",
		"/api/snowflake/get/", "/api/snowflake/get/t/x", "/api/segment/get/t%2Fx"} {
		if r := get(t, h, p); r.Status != http.StatusNotFound {
			t.Errorf("%s: %d %s, want 404", p, r.Status, r.Body)
		}
		if r := doHandler(s, req(http.MethodPost, p, "", "")); r.Status != http.StatusNotFound {
			t.Errorf("POST %s: %d %s, want 404", p, r.Status, r.Body)
		}
	}
	// TRACE: Tomcat refuses it for leaf-server (allowTrace false); OPTIONS
	// answers Allow, issuing nothing.
	if r := doHandler(s, req(http.MethodTrace, "/api/segment/get/t", "", "")); r.Status != http.StatusMethodNotAllowed {
		t.Errorf("TRACE: %d %s", r.Status, r.Body)
	}
	if r := doHandler(s, req(http.MethodOptions, "/api/segment/get/t/", "", "")); r.Status >= 300 || !strings.Contains(r.Header.Get("Allow"), "GET") {
		t.Errorf("OPTIONS: %d %q %s", r.Status, r.Header.Get("Allow"), r.Body)
	}
	// HEAD issues, as GET (net/http drops the body).
	if r := doHandler(s, req(http.MethodHead, "/api/segment/get/t/", "", "")); r.Status != 200 {
		t.Errorf("HEAD: %d %q", r.Status, r.Body)
	}
	// A cross-site form POST (another site's page) is refused as a GET
	// is: a method answered as GET is screened as GET.
	for _, hd := range [][2]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "http://evil.example"}} {
		q := req(http.MethodPost, "/api/segment/get/t/", "application/x-www-form-urlencoded", "a=1")
		q.Header.Set(hd[0], hd[1])
		if r := doHandler(s, q); r.Status != http.StatusForbidden {
			t.Errorf("cross-site POST (%s): %d %s", hd[0], r.Status, r.Body)
		}
	}
	if got := javaLong(t, get(t, h, "/api/segment/get/t")); got != first+2 {
		t.Errorf("after OPTIONS, HEAD and cross-site POSTs: %d, want %d (HEAD issues one, the others none)", got, first+2)
	}
	// A failure's Spring body names the path as sent, slash and method
	// aside (Spring's error attributes read the request URI).
	r := doHandler(s, req(http.MethodPost, "/api/segment/get/no-such-tag/", "", ""))
	wantLeafError(t, r, "Result{id=-2, status=EXCEPTION}", "/api/segment/get/no-such-tag/")
	// A key sent percent-encoded is decoded; its trailing slash too is dropped.
	if r := get(t, h, "/api/segment/get/%74/"); r.Status != 200 {
		t.Errorf("percent-encoded key with a slash: %d %s", r.Status, r.Body)
	}
	// Other routes keep their methods: POST /genid is still 405.
	if r := doHandler(s, req(http.MethodPost, "/genid", "", "")); r.Status != http.StatusMethodNotAllowed {
		t.Errorf("POST /genid: %d", r.Status)
	}
}

// TestLeafRoutesNeedToken: with rest.token set, every Leaf route, however
// it is called, needs the bearer token, as every ID route does.
func TestLeafRoutesNeedToken(t *testing.T) {
	is, _, _ := seqIssuer(t, "t")
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{Sequences: is, Token: token})
	rest.UnlimitAuth(s)
	for _, c := range callers(t, s) {
		for _, p := range []string{"/api/segment/get/t", "/api/snowflake/get/t", "/decodeSnowflakeId?snowflakeId=1", "/cache", "/db"} {
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				for _, slash := range []string{"", "/"} {
					target := p + slash
					if i := strings.IndexByte(p, '?'); i >= 0 {
						target = p[:i] + slash + p[i:]
					}
					r := c.do(t, req(method, target, "", ""))
					if r.Status != http.StatusUnauthorized || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
						t.Errorf("%s: %s %s without the token: %d %q", c.name, method, target, r.Status, r.Body)
					}
					q := req(method, target, "", "")
					q.Header.Set("Authorization", "Bearer "+token)
					if r := c.do(t, q); r.Status != http.StatusOK {
						t.Errorf("%s: %s %s with the token: %d %s", c.name, method, target, r.Status, r.Body)
					}
				}
			}
		}
	}
}

// leafID builds an ID with Leaf's bits (SnowflakeIDGenImpl: timestamp
// since twepoch << 22 | workerId << 12 | sequence).
func leafID(ms, worker, seq int64) int64 {
	return (ms-1288834974657)<<22 | worker<<12 | seq
}

// leafDecodeJava is LeafMonitorController.decodeSnowflakeId's arithmetic,
// transcribed from its Java with its XORs, to check the server's.
func leafDecodeJava(id int64) (ms, worker, seq int64) {
	return (id >> 22) + 1288834974657, (id >> 12) ^ (id >> 22 << 10), id ^ (id >> 12 << 12)
}

// TestLeafDecodeSnowflakeID checks /decodeSnowflakeId against
// LeafMonitorController.decodeSnowflakeId: Long.parseLong of the
// parameter (a NumberFormatException is {"errorMsg":...}, 200), Leaf's
// fixed bits whatever the server's layout, the date by SimpleDateFormat
// "yyyy-MM-dd HH:mm:ss.SSS" in the JVM's zone (here the server's, set to
// UTC+8 for exact strings), and a HashMap<String,String> that Jackson
// writes in bucket order: workerId, sequenceId, timestamp. A missing
// parameter is Spring's 400 for a required @RequestParam.
func TestLeafDecodeSnowflakeID(t *testing.T) {
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{}) // no segment store: decoding needs none
	rest.SetLeafZone(s, time.FixedZone("CST", 8*3600))
	const bad = `{"errorMsg":"snowflake Id反解析发生异常!"}`
	for _, tc := range []struct{ param, want string }{
		// The example in LeafMonitorController's comment.
		{strconv.FormatInt(leafID(1567733700834, 39, 3448), 10), `{"workerId":"39","sequenceId":"3448","timestamp":"1567733700834(2019-09-06 09:35:00.834)"}`},
		{"0", `{"workerId":"0","sequenceId":"0","timestamp":"1288834974657(2010-11-04 09:42:54.657)"}`},
		{"%2B4095", `{"workerId":"0","sequenceId":"4095","timestamp":"1288834974657(2010-11-04 09:42:54.657)"}`},
		{"0004096", `{"workerId":"1","sequenceId":"0","timestamp":"1288834974657(2010-11-04 09:42:54.657)"}`},
		// Negative longs decode through Java's arithmetic shift.
		{"-1", `{"workerId":"1023","sequenceId":"4095","timestamp":"1288834974656(2010-11-04 09:42:54.656)"}`},
		{"9223372036854775807", `{"workerId":"1023","sequenceId":"4095","timestamp":"3487858230208(2080-07-11 01:30:30.208)"}`},
		{"-9223372036854775808", `{"workerId":"0","sequenceId":"0","timestamp":"-910188280895(1941-02-27 17:55:19.105)"}`},
		// What parseLong refuses.
		{"", bad}, {"abc", bad}, {"9223372036854775808", bad}, {"-9223372036854775809", bad},
		{"99999999999999999999999999999999999999", bad}, {"1.5", bad}, {"%201", bad}, {"1%20", bad},
		{"0x10", bad}, {"1_000", bad}, {"-", bad}, {"+1", bad}, // a query's + is a space {"%3Cscript%3E", bad}, {"1&snowflakeId=2", bad},
	} {
		r := get(t, s.Handler(), "/decodeSnowflakeId?snowflakeId="+tc.param)
		if r.Status != http.StatusOK || r.Body != tc.want || r.Header.Get("Content-Type") != "application/json;charset=UTF-8" {
			t.Errorf("snowflakeId=%s: %d %q %q\nwant 200 %s", tc.param, r.Status, r.Header.Get("Content-Type"), r.Body, tc.want)
		}
	}
	// The server's decoding is Leaf's Java arithmetic, for IDs of every
	// sign and field.
	for _, id := range []int64{1, 4095, 4096, 1<<22 - 1, 1 << 22, leafID(1700000000000, 512, 7), -4097, -1 << 22, -(1 << 62) + 12345} {
		ms, w, sq := leafDecodeJava(id)
		var got map[string]string
		decode(t, get(t, s.Handler(), "/decodeSnowflakeId?snowflakeId="+strconv.FormatInt(id, 10)).Body, &got)
		wantTS := strconv.FormatInt(ms, 10) + "(" + time.UnixMilli(ms).In(time.FixedZone("", 8*3600)).Format("2006-01-02 15:04:05.000") + ")"
		if got["workerId"] != strconv.FormatInt(w, 10) || got["sequenceId"] != strconv.FormatInt(sq, 10) || got["timestamp"] != wantTS {
			t.Errorf("%d: %v; want worker %d, sequence %d, %s", id, got, w, sq, wantTS)
		}
	}
	// Missing: Spring's MissingServletRequestParameterException, 400.
	r := get(t, s.Handler(), "/decodeSnowflakeId")
	var b springBody
	decode(t, r.Body, &b)
	if r.Status != 400 || b.Status != 400 || b.Error != "Bad Request" || b.Path != "/decodeSnowflakeId" ||
		b.Exception != "org.springframework.web.bind.MissingServletRequestParameterException" ||
		b.Message != "Required String parameter 'snowflakeId' is not present" {
		t.Errorf("missing parameter: %d %s", r.Status, r.Body)
	}
	// Any method and a trailing slash, as Leaf's @RequestMapping.
	if r := doHandler(s, req(http.MethodPost, "/decodeSnowflakeId/?snowflakeId=0", "", "")); !strings.Contains(r.Body, `"workerId":"0"`) {
		t.Errorf("POST with a slash: %d %s", r.Status, r.Body)
	}
	// By default dates are in the server's local zone, as Leaf's JVM default.
	local := newServer(t, gen, rest.Config{})
	var m map[string]string
	decode(t, get(t, local.Handler(), "/decodeSnowflakeId?snowflakeId=0").Body, &m)
	if want := "1288834974657(" + time.UnixMilli(1288834974657).Local().Format("2006-01-02 15:04:05.000") + ")"; m["timestamp"] != want {
		t.Errorf("local zone: %q, want %q", m["timestamp"], want)
	}
}
