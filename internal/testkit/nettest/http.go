package nettest

import (
	"io"
	"net/http"
)

// Do sends req with hc and reads the whole answer, whatever its status:
// the status and the body. The error is the request's or the read's.
func Do(hc *http.Client, req *http.Request) (int, []byte, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// Get is Do of a GET of url.
func Get(hc *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	return Do(hc, req)
}
