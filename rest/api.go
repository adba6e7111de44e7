package rest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/internal/buildinfo"
	"github.com/vesta-go/vesta/mask"
)

// The JSON API writes IDs as strings: they exceed 2^53, past which
// JavaScript's numbers (and many JSON readers) round them.

// GET /v1/id → {"id":"…"}; with masked=true (mask.go) {"id":"…","masked":"…"}
func (s *Server) apiID(c echo.Context) error {
	var m *mask.Masker
	if c.Request().URL.RawQuery != "" {
		var err error
		if m, err = s.maskedOpt(c); err != nil {
			return err // before issuing: no ID lost
		}
	}
	id, err := s.issueOne(c)
	if err != nil {
		return err
	}
	s.m.issued.Add(1)
	b := make([]byte, 0, 80)
	b = append(b, `{"id":"`...)
	b = strconv.AppendUint(b, uint64(id), 10)
	if m != nil {
		b = m.AppendMask(append(b, `","masked":"`...), id)
	}
	b = append(b, "\"}\n"...)
	return blob(c, appJSON, b)
}

// GET /v1/ids?count=N → {"ids":["…",…]}; with masked=true (mask.go)
// {"ids":["…",…],"masked":["…",…]}
func (s *Server) apiIDs(c echo.Context) error {
	n, err := requiredUint(c, "count")
	if err != nil {
		return err
	}
	if n < 1 || n > uint64(s.cfg.MaxBatch) {
		return badParam("count", "%d out of range 1-%d", n, s.cfg.MaxBatch)
	}
	m, err := s.maskedOpt(c)
	if err != nil {
		return err // before issuing: no ID lost
	}
	ids, err := s.issue(c, int(n))
	if err != nil {
		return err // IDs issued before an error are dropped, never answered
	}
	s.m.issued.Add(uint64(len(ids)))
	size := 12 + len(ids)*23
	if m != nil {
		size += 12 + len(ids)*(len(m.Kind())+18)
	}
	b := make([]byte, 0, size)
	b = append(b, `{"ids":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendUint(b, uint64(id), 10)
		b = append(b, '"')
	}
	if m != nil {
		b = append(b, `],"masked":[`...)
		for i, id := range ids {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(m.AppendMask(append(b, '"'), id), '"')
		}
	}
	b = append(b, "]}\n"...)
	return blob(c, appJSON, b)
}

// GET /v1/ids/{id} → the explanation (core.Explanation's JSON).
func (s *Server) apiExplain(c echo.Context) error {
	id, err := parseUint("id", c.Param("id"))
	if err != nil {
		return err
	}
	holder, err := wantsHolder(c)
	if err != nil {
		return err
	}
	if holder {
		return s.explainWithHolder(c, s.codec.Explain(core.ID(id))) // holder.go
	}
	return c.JSON(http.StatusOK, s.codec.Explain(core.ID(id)))
}

// POST /v1/make {"time":…,"seq":…,…} → {"id":"…"}
func (s *Server) apiMake(c echo.Context) error {
	p, err := makeBody(c.Request())
	if err != nil {
		return err
	}
	id, err := s.codec.Make(p.Fill(s.gen.Own(core.REST)))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, idBody{ID: id.String()})
}

type idBody struct {
	ID string `json:"id"`
}

// transTimeBody is the answer of /v1/transtime, the central server's
// TransTime map plus the time and type it was asked.
type transTimeBody struct {
	Time      uint64 `json:"time"`
	Type      uint8  `json:"type"`
	UnixMs    int64  `json:"unix_ms"`
	Timestamp string `json:"timestamp"`
}

// GET /v1/transtime?time=[&type=] → the instant of a time field; type
// defaults to the server's.
func (s *Server) apiTransTime(c echo.Context) error {
	units, err := requiredUint(c, "time")
	if err != nil {
		return err
	}
	t := s.gen.Type()
	if v, ok, err := query(c, "type"); err != nil {
		return err
	} else if ok {
		n, err := parseField("type", "type", v)
		if err != nil {
			return err
		}
		if n > 1 {
			return badParam("type", "%d out of range 0-1", n)
		}
		t = core.Type(n)
	}
	at, err := s.codec.TransTime(t, units)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, transTimeBody{Time: units, Type: uint8(t), UnixMs: at.UnixMilli(), Timestamp: core.FormatInstant(t, at)})
}

// infoBody is what the server issues, as the central server's Info.
type infoBody struct {
	Layout     string `json:"layout"`
	Epoch      string `json:"epoch"`
	Type       uint8  `json:"type"`
	TypeName   string `json:"type_name"`
	Machine    uint16 `json:"machine"`
	Method     uint8  `json:"method"`
	MethodName string `json:"method_name"`
	Version    uint8  `json:"version"` // the IDs' version bit
	MaxBatch   int    `json:"max_batch"`
	// Build is the server's build: its version, VCS revision and Go
	// version (vesta version and vesta_build_info say the same).
	Build buildinfo.Info `json:"build"`
}

// GET /v1/info
func (s *Server) apiInfo(c echo.Context) error {
	return c.JSON(http.StatusOK, infoBody{
		Layout: s.gen.Layout().String(), Epoch: s.codec.Epoch().Format(time.RFC3339Nano),
		Type: uint8(s.gen.Type()), TypeName: s.gen.Type().String(), Machine: uint16(s.gen.Machine()),
		Method: uint8(core.REST), MethodName: core.REST.String(), Version: s.gen.Version(), MaxBatch: s.cfg.MaxBatch,
		Build: buildinfo.Read(),
	})
}
