// Package browser holds the REST page's browser tests, which drive the
// page that package rest serves at GET / in headless Chromium (through
// github.com/chromedp/chromedp) and check what it shows against the JSON
// API: TestPageInBrowser the ID explorer, TestOperatorPageInBrowser the
// server's state (against /v1/info, /v1/status and /metrics), the live
// chart and the bit-field drawing (against core.Codec.Explain),
// TestOperatorPageFirstLoad the page opened after a burst (the history
// the server kept, the process's figures, the placeholder, ?id=). With
// VESTA_SCREENSHOT_DIR=dir the page's screenshots are saved in dir
// (../../docs for the ones kept in docs/).
//
// It is a module of its own, with a replace directive to the main module,
// so that the product module's go.mod lists only what the product runs;
// `make test` (scripts/test.sh) runs it after the main module's tests:
//
//	cd tools/browser && go test -race -count=1 ./...
//
// The test needs Chromium (Debian's chromium, installed by
// scripts/deps.sh, or $VESTA_CHROMIUM) and never skips: a missing browser
// is a failure that says how to install it.
package browser
