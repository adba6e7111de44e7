// Package browser holds the REST page's browser test: TestPageInBrowser
// drives the page that package rest serves at GET / in headless Chromium
// (through github.com/chromedp/chromedp) and checks what it shows against
// the JSON API.
//
// It is a module of its own, with a replace directive to the main module,
// so that the product module's go.mod lists only what the product runs;
// `make test` (scripts/test.sh) runs it after the main module's tests:
//
//	cd rest/browser && go test -race -count=1 ./...
//
// The test needs Chromium (Debian's chromium, installed by
// scripts/deps.sh, or $VESTA_CHROMIUM) and never skips: a missing browser
// is a failure that says how to install it.
package browser
