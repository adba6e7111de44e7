package rest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"time"

	"github.com/vesta-go/vesta/core"
	"github.com/vesta-go/vesta/rest"
)

// Explaining and making IDs with a vesta-layout server, in-process. The
// requests name the server as a client would (Host localhost:7080): the
// server answers only its own names (Config.AllowedHosts).
func ExampleNewServer() {
	gen, err := core.New(context.Background(), core.Config{Layout: core.Vesta, Machine: 1022,
		Clock: core.NewManualClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		panic(err)
	}
	defer gen.Close()
	srv, err := rest.NewServer(gen, rest.DefaultConfig())
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	for _, target := range []string{
		"/makeid?time=284025600&seq=5",
		"/expid?id=2610813175020394494",
		"/transtime?time=284025600",
		"/v1/ids/2610813175020394494",
		"/v1/ids?count=0",
	} {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost:7080"+target, nil))
		body, _ := io.ReadAll(rec.Body)
		fmt.Printf("%d %s\n", rec.Code, bytes.TrimSpace(body))
	}
	// Output:
	// 200 2610813175020394494
	// 200 {"genMethod":2,"machine":1022,"seq":5,"time":284025600,"type":0,"version":0}
	// 200 Mon Jan 01 00:00:00 UTC 2024
	// 200 {"id":"2610813175020394494","version":0,"type":0,"type_name":"max-peak","method":2,"method_name":"rest","time":284025600,"seq":5,"machine":1022,"timestamp":"2024-01-01T00:00:00Z"}
	// 400 {"error":{"code":"invalid_argument","message":"count: 0 out of range 1-10000"}}
}
