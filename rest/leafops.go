package rest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/vesta-go/vesta/segment"
)

// Leaf's operator routes (LeafMonitorController): /decodeSnowflakeId, and
// the /cache and /db pages of the segment side. Leaf renders the pages
// with Freemarker and no escaping; here they are html/template, with no
// external asset, and also JSON for scripts when Accept prefers
// application/json (the content negotiation the ID routes use). Failures
// answer as leaf-server's do: Spring's error body (leaf.go).

// SequenceMonitor is what /cache and /db read of Config.Sequences;
// *segment.Sequencer implements it. Sequences without it answer those routes
// as a Leaf with the segment side off.
type SequenceMonitor interface {
	// Buffers is a snapshot of every tag's double buffer, sorted by tag.
	Buffers() []segment.BufferState
	// Rows reads the store's rows now.
	Rows(ctx context.Context) ([]segment.TagInfo, error)
}

// leafEpoch is Leaf's twepoch (SnowflakeIDGenImpl): 2010-11-04T01:42:54.657Z.
const leafEpoch = 1288834974657

// leafDecode is Leaf's decoding of a snowflake ID, with Leaf's fixed bits
// whatever this server's layout, as leaf-server's /decodeSnowflakeId
// (LeafMonitorController.decodeSnowflakeId) computes it: 41 bits of
// milliseconds since leafEpoch, 10 of worker, 12 of sequence. Java's >> is
// arithmetic, as Go's on int64, so a negative ID decodes as in Leaf; its
// XOR forms of the masks equal the ANDs here.
func leafDecode(id int64) (ms, worker, seq int64) {
	return id>>22 + leafEpoch, id >> 12 & 1023, id & 4095
}

// leafDecoded is decodeSnowflakeId's answer, a Java HashMap<String,
// String> that Jackson writes in the map's bucket order: workerId,
// sequenceId, timestamp (errorMsg alone).
type leafDecoded struct {
	WorkerID   string `json:"workerId,omitempty"`
	SequenceID string `json:"sequenceId,omitempty"`
	Timestamp  string `json:"timestamp,omitempty"`
	ErrorMsg   string `json:"errorMsg,omitempty"`
}

// leafDecodeError is Leaf's errorMsg for a snowflakeId Long.parseLong
// refuses ("an exception decoding the snowflake ID").
const leafDecodeError = "snowflake Id反解析发生异常!"

// leafTimeLayout is Leaf's SimpleDateFormat pattern yyyy-MM-dd HH:mm:ss.SSS.
const leafTimeLayout = "2006-01-02 15:04:05.000"

// GET /decodeSnowflakeId?snowflakeId=N
func (s *Server) leafDecodeID(c echo.Context) error {
	vals, ok := c.QueryParams()["snowflakeId"]
	if !ok {
		// Spring's answer to a missing @RequestParam.
		return s.leafError(c, http.StatusBadRequest, "org.springframework.web.bind.MissingServletRequestParameterException",
			"Required String parameter 'snowflakeId' is not present", nil)
	}
	// Spring joins a repeated parameter with commas for a String, which
	// Long.parseLong then refuses. ParseInt takes what parseLong does for
	// ASCII: an optional sign and decimal digits within int64 (parseLong
	// also takes other Unicode digits; here those are errorMsg).
	var out leafDecoded
	if id, err := strconv.ParseInt(strings.Join(vals, ","), 10, 64); err != nil {
		out.ErrorMsg = leafDecodeError
	} else {
		ms, worker, seq := leafDecode(id)
		out.WorkerID, out.SequenceID = strconv.FormatInt(worker, 10), strconv.FormatInt(seq, 10)
		out.Timestamp = strconv.FormatInt(ms, 10) + "(" + time.UnixMilli(ms).In(s.leafZone).Format(leafTimeLayout) + ")"
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, springJSON, b)
}

// leafMonitor is the segment side for /cache and /db, or nil when off,
// with the failure to answer then (Leaf: IllegalArgumentException).
func (s *Server) leafMonitor(c echo.Context) (SequenceMonitor, error) {
	if m, ok := s.cfg.Sequences.(SequenceMonitor); ok {
		return m, nil
	}
	msg := errSeqOff.Error()
	if s.cfg.Sequences != nil {
		msg = "the segment sequences of this server (rest.Config.Sequences) show no buffers"
	}
	return nil, s.leafError(c, http.StatusInternalServerError, "java.lang.IllegalArgumentException", msg, nil)
}

// leafCacheJSON is a tag of /cache in JSON: numbers that may pass 2^53
// are strings, as IDs are.
type leafCacheJSON struct {
	Key       string            `json:"key"`
	InitOK    bool              `json:"init_ok"`
	NextReady bool              `json:"next_ready"`
	Pos       int               `json:"pos"`
	Segments  [2]leafSegmentVal `json:"segments"`
}

type leafSegmentVal struct {
	Value string `json:"value"`
	Max   string `json:"max"`
	Step  int64  `json:"step"`
}

// GET /cache: every tag's buffers (Leaf's segment.ftl columns).
func (s *Server) leafCache(c echo.Context) error {
	m, err := s.leafMonitor(c)
	if m == nil {
		return err
	}
	bufs := m.Buffers()
	return leafAnswer(c, "cache", bufs, func() any {
		out := struct {
			Buffers []leafCacheJSON `json:"buffers"`
		}{make([]leafCacheJSON, len(bufs))}
		for i, b := range bufs {
			j := leafCacheJSON{Key: b.Tag, InitOK: b.InitOK, NextReady: b.NextReady, Pos: b.Pos}
			for k, sg := range b.Segments {
				j.Segments[k] = leafSegmentVal{strconv.FormatInt(sg.Value, 10), strconv.FormatInt(sg.Max, 10), sg.Step}
			}
			out.Buffers[i] = j
		}
		return out
	})
}

// leafRow is a row of /db in JSON, named as leaf_alloc's columns.
type leafRow struct {
	BizTag      string `json:"biz_tag"`
	MaxID       string `json:"max_id"`
	Step        int64  `json:"step"`
	Description string `json:"description"`
	// UpdateTime is RFC 3339, "" when the store keeps none.
	UpdateTime string `json:"update_time"`
}

// leafStoreException is what Leaf's DAO throws when the database fails
// (IDAllocDaoImpl's SqlSession).
const leafStoreException = "org.apache.ibatis.exceptions.PersistenceException"

// GET /db: the store's rows (Leaf's db.ftl columns, with description).
func (s *Server) leafDB(c echo.Context) error {
	m, err := s.leafMonitor(c)
	if m == nil {
		return err
	}
	ctx := s.issueCtx(c)
	defer ctx.release()
	rows, err := m.Rows(ctx)
	if err != nil {
		return s.leafError(c, http.StatusInternalServerError, leafStoreException, strings.TrimPrefix(err.Error(), "segment: "), err)
	}
	return leafAnswer(c, "db", rows, func() any {
		out := struct {
			Rows []leafRow `json:"rows"`
		}{make([]leafRow, len(rows))}
		for i, r := range rows {
			out.Rows[i] = leafRow{BizTag: r.Tag, MaxID: strconv.FormatInt(r.MaxID, 10), Step: r.Step, Description: r.Description}
			if !r.Updated.IsZero() {
				out.Rows[i].UpdateTime = r.Updated.Format(time.RFC3339)
			}
		}
		return out
	})
}

// leafStyle is the pages' one inline style, allowed by its hash.
const leafStyle = `body{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}` +
	`th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right}th:first-child,td:first-child{text-align:left}`

// leafPageCSP lets the pages load nothing but their own style.
var leafPageCSP = func() string {
	sum := sha256.Sum256([]byte(leafStyle))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}()

// leafPages are /cache's and /db's HTML, Leaf's columns; html/template
// escapes every value.
var leafPageTmpl = template.Must(template.New("leaf").Funcs(template.FuncMap{
	"updated": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Format("2006-01-02 15:04:05") // as MySQL prints update_time, which Leaf shows
	},
}).Parse(`{{define "head"}}<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.}} · vesta (Leaf API)</title><style>` + leafStyle + `</style></head>
<body><h1>{{.}}</h1>
{{end}}{{define "cache"}}{{template "head" "Segment buffers"}}<table><thead><tr><th>name</th><th>init</th><th>next</th><th>pos</th><th>value0</th><th>max0</th><th>step0</th><th>value1</th><th>max1</th><th>step1</th></tr></thead>
<tbody>{{range .}}<tr><td>{{.Tag}}</td><td>{{.InitOK}}</td><td>{{.NextReady}}</td><td>{{.Pos}}</td>{{range .Segments}}<td>{{.Value}}</td><td>{{.Max}}</td><td>{{.Step}}</td>{{end}}</tr>
{{end}}</tbody></table></body></html>
{{end}}{{define "db"}}{{template "head" "leaf_alloc"}}<table><thead><tr><th>tag</th><th>max</th><th>step</th><th>description</th><th>update</th></tr></thead>
<tbody>{{range .}}<tr><td>{{.Tag}}</td><td>{{.MaxID}}</td><td>{{.Step}}</td><td>{{.Description}}</td><td>{{updated .Updated}}</td></tr>
{{end}}</tbody></table></body></html>
{{end}}`))

// leafAnswer answers an operator route: the HTML page of data, or the
// JSON of toJSON when Accept prefers it. Either changes with every call.
func leafAnswer(c echo.Context, page string, data any, toJSON func() any) error {
	h := c.Response().Header()
	h.Add(echo.HeaderVary, echo.HeaderAccept)
	h.Set(echo.HeaderCacheControl, "no-store")
	if prefersJSON(c.Request().Header.Get(echo.HeaderAccept)) {
		return c.JSON(http.StatusOK, toJSON())
	}
	var b bytes.Buffer
	if err := leafPageTmpl.ExecuteTemplate(&b, page, data); err != nil {
		return err
	}
	h.Set("Content-Security-Policy", leafPageCSP)
	h.Set("Referrer-Policy", "no-referrer")
	return c.Blob(http.StatusOK, echo.MIMETextHTMLCharsetUTF8, b.Bytes())
}
