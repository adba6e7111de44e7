package rest

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/vesta-go/vesta/core"
)

// The Vesta-compatible routes answer what Vesta's Java REST server
// (IdController) answers, for the vesta layout, with three deliberate
// differences: IDs are unsigned decimals (Java printed version-1 IDs as
// negative longs), missing or malformed parameters are a 400 instead of a
// default value or a Java exception, and /makeid takes its fields by name
// (Vesta passed them to makeId in the wrong order when version or type was
// given).

// javaDate is the layout of Java's Date.toString ("EEE MMM dd HH:mm:ss zzz
// yyyy"), which Vesta's /transtime returns; printed in UTC here, where
// Vesta used the JVM's default zone.
const javaDate = "Mon Jan 02 15:04:05 MST 2006"

// vestaID is Vesta's Id bean as its /expid serialises it (keys in the
// order Vesta's documentation shows).
type vestaID struct {
	GenMethod uint64 `json:"genMethod"`
	Machine   uint64 `json:"machine"`
	Seq       uint64 `json:"seq"`
	Time      uint64 `json:"time"`
	Type      uint64 `json:"type"`
	Version   uint64 `json:"version"`
}

// GET /genid: one ID, as a bare decimal.
func (s *Server) vestaGenID(c echo.Context) error {
	id, err := s.issueOne(c)
	if err != nil {
		return err
	}
	s.m.issued.Add(1)
	var buf [20]byte
	return blob(c, textPlain, strconv.AppendUint(buf[:0], uint64(id), 10))
}

// GET /expid?id=: the ID's fields, as Vesta's JSON.
func (s *Server) vestaExpID(c echo.Context) error {
	id, err := requiredUint(c, "id")
	if err != nil {
		return err
	}
	e := s.codec.Explain(core.ID(id))
	b, err := json.Marshal(vestaID{GenMethod: uint64(e.Method), Machine: uint64(e.Machine), Seq: e.Seq,
		Time: e.Time, Type: uint64(e.Type), Version: uint64(e.Version)})
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

// GET /transtime?time=: the instant of a time field of the server's type.
func (s *Server) vestaTransTime(c echo.Context) error {
	units, err := requiredUint(c, "time")
	if err != nil {
		return err
	}
	t, err := s.codec.TransTime(s.gen.Type(), units)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, echo.MIMETextPlainCharsetUTF8, []byte(t.UTC().Format(javaDate)))
}

// GET /makeid?time=&seq=[&machine=&method=&type=&version=]: the ID of the
// named fields; those left out are the server's own (method REST).
func (s *Server) vestaMakeID(c echo.Context) error {
	p, err := makeQuery(c)
	if err != nil {
		return err
	}
	id, err := s.codec.Make(p.Fill(s.gen.Own(core.REST)))
	if err != nil {
		return err
	}
	var buf [20]byte
	return c.Blob(http.StatusOK, echo.MIMETextPlainCharsetUTF8, strconv.AppendUint(buf[:0], uint64(id), 10))
}
