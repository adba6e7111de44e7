package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vesta-go/vesta/internal/testkit"
	"github.com/vesta-go/vesta/internal/testkit/mariadbtest"
	"github.com/vesta-go/vesta/internal/testkit/redistest"
	"github.com/vesta-go/vesta/internal/testkit/segtest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/rest"
	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/mysqlstore"
	"github.com/vesta-go/vesta/segment/redisstore"
)

// leafCacheBody is /cache's JSON.
type leafCacheBody struct {
	Buffers []struct {
		Key       string `json:"key"`
		InitOK    bool   `json:"init_ok"`
		NextReady bool   `json:"next_ready"`
		Pos       int    `json:"pos"`
		Segments  [2]struct {
			Value string `json:"value"`
			Max   string `json:"max"`
			Step  int64  `json:"step"`
		} `json:"segments"`
	} `json:"buffers"`
}

// leafDBBody is /db's JSON.
type leafDBBody struct {
	Rows []struct {
		BizTag      string `json:"biz_tag"`
		MaxID       string `json:"max_id"`
		Step        int64  `json:"step"`
		Description string `json:"description"`
		UpdateTime  string `json:"update_time"`
	} `json:"rows"`
}

// getAs sends GET target to s with Accept.
func getAs(s *rest.Server, target, accept string) response {
	q := req(http.MethodGet, target, "", "")
	if accept != "" {
		q.Header.Set("Accept", accept)
	}
	return doHandler(s, q)
}

// strictJSON decodes a 200 JSON answer into v, refusing unknown fields.
func strictJSON(t *testing.T, r response, v any) {
	t.Helper()
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %q %s; want 200 JSON", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	dec := json.NewDecoder(strings.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", r.Body, err)
	}
}

// wantPage checks an HTML answer of /cache or /db and that it holds every
// fragment.
func wantPage(t *testing.T, r response, fragments ...string) {
	t.Helper()
	if r.Status != 200 || r.Header.Get("Content-Type") != "text/html; charset=UTF-8" ||
		!strings.HasPrefix(r.Header.Get("Content-Security-Policy"), "default-src 'none'") || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v; want an HTML page", r.Status, r.Header)
	}
	for _, f := range fragments {
		if !strings.Contains(r.Body, f) {
			t.Errorf("page lacks %q:\n%s", f, r.Body)
		}
	}
}

// TestLeafCache: /cache shows what leaf-server's does (LeafMonitorController.
// getCache, template segment.ftl): per tag name, init (SegmentBuffer.initOk),
// next (nextReady), pos (currentPos) and both Segments' value, max, step;
// as HTML, and as JSON when Accept prefers it.
func TestLeafCache(t *testing.T) {
	s, _, _ := seqServer(t, "a", "b")
	// Two numbers of a (step 10: the second passes Leaf's 10% and starts
	// the fetch of [11, 20] into slot 1).
	for want := int64(1); want <= 2; want++ {
		if v := javaLong(t, get(t, s.Handler(), "/api/segment/get/a")); v != want {
			t.Fatalf("number %d, want %d", v, want)
		}
	}
	var body leafCacheBody
	waittest.Until(t, "the next range of a ready", func() bool {
		body = leafCacheBody{}
		strictJSON(t, getAs(s, "/cache", "application/json"), &body)
		return len(body.Buffers) == 2 && body.Buffers[0].NextReady
	})
	a, b := body.Buffers[0], body.Buffers[1]
	if a.Key != "a" || !a.InitOK || a.Pos != 0 || a.Segments[0].Value != "3" || a.Segments[0].Max != "11" || a.Segments[0].Step != 10 ||
		a.Segments[1].Value != "11" || a.Segments[1].Max != "21" || a.Segments[1].Step != 10 {
		t.Errorf("a: %+v", a)
	}
	if b.Key != "b" || b.InitOK || b.NextReady || b.Pos != 0 || b.Segments[0].Max != "0" || b.Segments[1].Step != 0 {
		t.Errorf("b (never used): %+v", b)
	}
	wantPage(t, getAs(s, "/cache", ""),
		"<th>name</th><th>init</th><th>next</th><th>pos</th><th>value0</th><th>max0</th><th>step0</th><th>value1</th><th>max1</th><th>step1</th>",
		"<tr><td>a</td><td>true</td><td>true</td><td>0</td><td>3</td><td>11</td><td>10</td><td>11</td><td>21</td><td>10</td></tr>",
		"<tr><td>b</td><td>false</td><td>false</td><td>0</td><td>0</td><td>0</td><td>0</td><td>0</td><td>0</td><td>0</td></tr>")
	// A browser's Accept gets the page; JSON only when preferred.
	wantPage(t, getAs(s, "/cache", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"))
	wantPage(t, getAs(s, "/cache/", "text/html;q=0.5, application/json;q=0.1"))
}

// TestLeafDB: /db lists the store's rows, as leaf-server's
// (LeafMonitorController.getDb, IDAllocMapper.getAllLeafAllocs, template
// db.ftl: tag, max, step, update), with description; values escaped, which
// Leaf's Freemarker template does not do.
func TestLeafDB(t *testing.T) {
	s, store, _ := seqServer(t, "a")
	const hostile = `<script>alert("x")</script> & co`
	if err := store.Create(context.Background(), segment.TagInfo{Tag: "b", MaxID: 1 << 60, Step: 1000, Description: hostile}); err != nil {
		t.Fatal(err)
	}
	r := getAs(s, "/db", "")
	wantPage(t, r, "<th>tag</th><th>max</th><th>step</th><th>description</th><th>update</th>",
		"<tr><td>a</td><td>1</td><td>10</td><td></td><td>",
		"<tr><td>b</td><td>1152921504606846976</td><td>1000</td><td>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; co</td><td>")
	if strings.Contains(r.Body, "<script>") {
		t.Errorf("unescaped: %s", r.Body)
	}
	var body leafDBBody
	strictJSON(t, getAs(s, "/db", "application/json"), &body)
	if len(body.Rows) != 2 || body.Rows[1].BizTag != "b" || body.Rows[1].MaxID != "1152921504606846976" || body.Rows[1].Step != 1000 ||
		body.Rows[1].Description != hostile || body.Rows[0].MaxID != "1" {
		t.Errorf("rows: %+v", body.Rows)
	}
	if _, err := time.Parse(time.RFC3339, body.Rows[0].UpdateTime); err != nil {
		t.Errorf("update_time %q: %v", body.Rows[0].UpdateTime, err)
	}
	// The store down: Leaf's DAO exception as Spring's 500; /cache reads
	// no store and still answers.
	store.Fail(errStoreDown)
	r = getAs(s, "/db", "")
	var sb springBody
	decode(t, r.Body, &sb)
	if r.Status != 500 || sb.Exception != "org.apache.ibatis.exceptions.PersistenceException" || !strings.Contains(sb.Message, "connection refused") || sb.Path != "/db" {
		t.Errorf("store down: %d %s", r.Status, r.Body)
	}
	wantPage(t, getAs(s, "/cache", ""), "<td>a</td>")
}

// TestLeafPagesOff: with no segment store, /cache and /db answer as
// leaf-server with the segment side off (LeafMonitorController throws
// IllegalArgumentException: Spring's 500), as do sequences that show no
// buffers; /decodeSnowflakeId needs no store.
func TestLeafPagesOff(t *testing.T) {
	gen, _ := vestaGen(t)
	off := newServer(t, gen, rest.Config{})
	is, _, _ := seqIssuer(t, "a")
	custom := newServer(t, gen, rest.Config{Sequences: struct{ segment.Sequences }{is}})
	for _, tc := range []struct {
		s       *rest.Server
		message string
	}{{off, "segment sequences are off on this server (segment.store)"}, {custom, "show no buffers"}} {
		for _, p := range []string{"/cache", "/db"} {
			for _, accept := range []string{"", "application/json"} {
				r := getAs(tc.s, p, accept)
				var b springBody
				decode(t, r.Body, &b)
				if r.Status != 500 || b.Exception != "java.lang.IllegalArgumentException" || !strings.Contains(b.Message, tc.message) || b.Path != p {
					t.Errorf("%s: %d %s", p, r.Status, r.Body)
				}
			}
		}
	}
	if r := get(t, off.Handler(), "/decodeSnowflakeId?snowflakeId=1"); r.Status != 200 || !strings.Contains(r.Body, `"sequenceId":"1"`) {
		t.Errorf("decode without a store: %d %s", r.Status, r.Body)
	}
}

// TestLeafHostileInput: huge, non-digit, negative, HTML-holding input on
// every Leaf route never panics nor reflects markup unescaped.
func TestLeafHostileInput(t *testing.T) {
	s, _, _ := seqServer(t, "a")
	huge := strings.Repeat("9", 20000)
	for _, target := range []string{
		"/decodeSnowflakeId?snowflakeId=" + huge, "/decodeSnowflakeId?snowflakeId=-" + huge,
		"/decodeSnowflakeId?snowflakeId=%3Cimg%20src%3Dx%3E", "/decodeSnowflakeId?snowflakeId=%00",
		"/decodeSnowflakeId?snowflakeId=%zz", "/decodeSnowflakeId?%3Cb%3E=1",
		"/api/segment/get/%3Cscript%3Ealert(1)%3C%2Fscript%3E", "/api/segment/get/" + huge, "/api/segment/get/-1",
		"/api/snowflake/get/%3Cscript%3E/", "/cache?%3Cb%3E=%3Cb%3E", "/db?format=%3Cb%3E",
	} {
		for _, accept := range []string{"", "application/json", "text/html", "<b>;q=<b>"} {
			r := getAs(s, target, accept)
			if r.Status == 0 || strings.Contains(r.Body, "<script>") || strings.Contains(r.Body, "<img") || strings.Contains(r.Body, "<b>") {
				t.Errorf("%.60s Accept %q: %d %.300s", target, accept, r.Status, r.Body)
			}
			switch {
			case strings.HasPrefix(target, "/api/snowflake/"): // Leaf ignores the key
				javaLong(t, r)
			case strings.HasPrefix(target, "/api/") && r.Status != 500 && r.Status != 404: // 404: a %2F in the key
				t.Errorf("%.60s: %d, want Leaf's 500 or no route", target, r.Status)
			}
		}
	}
}

// FuzzLeafDecode: any snowflakeId answers 200 with Leaf's three fields,
// equal to Leaf's Java arithmetic, exactly when Long.parseLong takes it,
// and Leaf's errorMsg otherwise.
func FuzzLeafDecode(f *testing.F) {
	for _, seed := range []string{"0", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "+1", " 1", "1e3", "", "٣"} {
		f.Add(seed)
	}
	gen, _ := vestaGen(f)
	s := newServer(f, gen, rest.Config{})
	rest.SetLeafZone(s, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		q := req(http.MethodGet, "/decodeSnowflakeId", "", "")
		q.URL.RawQuery = "snowflakeId=" + url.QueryEscape(v)
		r := doHandler(s, q)
		var m map[string]string
		if r.Status != 200 || json.Unmarshal([]byte(r.Body), &m) != nil {
			t.Fatalf("%q: %d %s", v, r.Status, r.Body)
		}
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			if len(m) != 1 || m["errorMsg"] == "" {
				t.Fatalf("%q: %s, want errorMsg", v, r.Body)
			}
			return
		}
		ms, w, sq := leafDecodeJava(id)
		want := map[string]string{"workerId": fmt.Sprint(w), "sequenceId": fmt.Sprint(sq),
			"timestamp": fmt.Sprintf("%d(%s)", ms, time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000"))}
		if fmt.Sprint(m) != fmt.Sprint(want) {
			t.Fatalf("%q: %v, want %v", v, m, want)
		}
	})
}

// TestLeafOnMariaDB: a Leaf table on a real MariaDB (Leaf's DDL and its
// sample row, scripts/leaf_alloc.sql) served to a Java-style client, with
// /db showing the rows as the database holds them (update_time as MySQL
// prints it, which Leaf's LeafAlloc.updateTime string carries) and a
// biz_tag no vesta tag may be (Leaf's table allows any) escaped.
func TestLeafOnMariaDB(t *testing.T) {
	srv := mariadbtest.Start(t)
	db := srv.Database(t, "leaf")
	for _, q := range []string{
		fmt.Sprintf(mysqlstore.Schema, "leaf_alloc"),
		"insert into leaf_alloc(biz_tag, max_id, step, description) values('leaf-segment-test', 1, 2000, 'Test leaf Segment Mode Get Id')",
		"insert into leaf_alloc(biz_tag, max_id, step, description) values('<img src=x onerror=alert(1)>', 1, 10, '<b>bold</b>')",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st, err := mysqlstore.Open(mysqlstore.Config{DSN: srv.DSN("leaf")})
	testkit.Closed(t, "mysqlstore.Open", st, err)
	cfg := segment.DefaultConfig()
	cfg.RefreshTags = -1
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{Sequences: segtest.Open(t, st, cfg)})
	for _, c := range callers(t, s) {
		t.Run(c.name, func(t *testing.T) {
			q := req(http.MethodPost, "/api/segment/get/leaf-segment-test/", "", "")
			q.Header.Set("Accept", "application/json")
			if v := javaLong(t, c.do(t, q)); v < 1 || v > 2000 {
				t.Fatalf("number %d, want one of Leaf's first range [1, 2000]", v)
			}
		})
	}
	var updated string
	if err := db.QueryRow("SELECT DATE_FORMAT(update_time, '%Y-%m-%d %H:%i:%s') FROM leaf_alloc WHERE biz_tag = 'leaf-segment-test'").Scan(&updated); err != nil {
		t.Fatal(err)
	}
	r := getAs(s, "/db", "")
	wantPage(t, r, "<tr><td>leaf-segment-test</td><td>2001</td><td>2000</td><td>Test leaf Segment Mode Get Id</td><td>"+updated+"</td></tr>",
		"<td>&lt;img src=x onerror=alert(1)&gt;</td><td>1</td><td>10</td><td>&lt;b&gt;bold&lt;/b&gt;</td>")
	if strings.Contains(r.Body, "<img") || strings.Contains(r.Body, "<b>") {
		t.Errorf("unescaped: %s", r.Body)
	}
	var body leafDBBody
	strictJSON(t, getAs(s, "/db", "application/json"), &body)
	if len(body.Rows) != 2 || body.Rows[1].BizTag != "leaf-segment-test" || body.Rows[1].MaxID != "2001" || body.Rows[1].Description != "Test leaf Segment Mode Get Id" {
		t.Errorf("rows: %+v", body.Rows)
	}
	// The tag vesta cannot serve is listed by /db, not held in /cache.
	var cache leafCacheBody
	strictJSON(t, getAs(s, "/cache", "application/json"), &cache)
	if len(cache.Buffers) != 1 || cache.Buffers[0].Key != "leaf-segment-test" || cache.Buffers[0].Segments[0].Max != "2001" || cache.Buffers[0].Segments[0].Step != 2000 {
		t.Errorf("cache: %+v", cache)
	}
}

// TestLeafOnRedis: /db and /cache on the Redis store, a real server: the
// rows as the store keeps them (update_time the store's last write), the
// buffers as issued.
func TestLeafOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	st, err := redisstore.Open(redisstore.Config{Addrs: []string{srv.Addr()}})
	testkit.Closed(t, "redisstore.Open", st, err)
	ctx := context.Background()
	if err := st.Create(ctx, segment.TagInfo{Tag: "order", MaxID: 1000, Step: 1000, Description: "order <numbers>"}); err != nil {
		t.Fatal(err)
	}
	cfg := segment.DefaultConfig()
	cfg.RefreshTags = -1
	gen, _ := vestaGen(t)
	s := newServer(t, gen, rest.Config{Sequences: segtest.Open(t, st, cfg)})
	if v := javaLong(t, doHandler(s, req(http.MethodPost, "/api/segment/get/order/", "", ""))); v != 1000 {
		t.Fatalf("first number %d, want max_id 1000, as Leaf", v)
	}
	var body leafDBBody
	strictJSON(t, getAs(s, "/db", "application/json"), &body)
	if len(body.Rows) != 1 || body.Rows[0].BizTag != "order" || body.Rows[0].MaxID != "2000" || body.Rows[0].Step != 1000 ||
		body.Rows[0].Description != "order <numbers>" {
		t.Fatalf("rows: %+v", body.Rows)
	}
	if u, err := time.Parse(time.RFC3339, body.Rows[0].UpdateTime); err != nil || time.Since(u) > time.Hour {
		t.Errorf("update_time %q: %v", body.Rows[0].UpdateTime, err)
	}
	wantPage(t, getAs(s, "/db", ""), "<td>order</td><td>2000</td><td>1000</td><td>order &lt;numbers&gt;</td>")
	wantPage(t, getAs(s, "/cache", ""), "<tr><td>order</td><td>true</td><td>false</td><td>0</td><td>1001</td><td>2000</td><td>1000</td>")
}
