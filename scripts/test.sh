#!/usr/bin/env bash
# The project's test command (README: `make test`; CI: .ci/run).
# Installs what the tests need when it is missing, then lints and runs every
# test with the race detector. No test is skipped when CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
STATICCHECK_VERSION=v0.8.2 # staticcheck 2026.2.2

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
# Test-only modules beside the product module: their dependencies (chromedp
# for the page's browser test, kin-openapi for rest/openapilint's strict
# validation of the served OpenAPI document, hdrhistogram for the load
# generator vesta-bench; bwmarrin/snowflake and sonyflake for bench/peers,
# whose benchmarks are compiled and vetted here, run by make bench-peers)
# stay out of the product's go.mod; nemesis is the fault injector's module
# (its ledger and report packages are tested here).
test_modules=(rest/browser rest/openapilint bench/load bench/peers nemesis)

echo "== go vet"
$GO vet ./...
for m in "${test_modules[@]}"; do (cd "$m" && $GO vet ./...); done
echo "== staticcheck"
$GO run "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}" ./...
for m in "${test_modules[@]}"; do (cd "$m" && $GO run "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}" ./...); done

if [ "${1:-}" = "--lint-only" ]; then exit 0; fi

echo "== dependencies"
scripts/deps.sh

echo "== go test -race"
$GO test -race -count=1 -timeout 30m ./...

# deploy/k8s/validate is a module of its own (the Kubernetes API types stay
# out of the product's go.mod); its first run downloads them through the
# module proxy, its tests use no network.
echo "== deploy/k8s/validate"
(cd deploy/k8s/validate && $GO mod download && $GO vet ./... && $GO test -race -count=1 ./...)
for m in "${test_modules[@]}"; do
  echo "== go test -race ($m)"
  (cd "$m" && $GO test -race -count=1 -timeout 10m ./...)
done

# The nemesis's short seeded run (both providers, every fault kind, about
# 2.5 minutes: exits 0 only with no repeat and every fault recovered), then
# its self-test: an unsafe fleet (two servers on one machine ID) that must
# show repeats, so that a checker that cannot fail would fail here.
echo "== nemesis --ci"
(cd nemesis && $GO run ./cmd/vesta-nemesis --ci)
echo "== nemesis --sabotage"
(cd nemesis && $GO run ./cmd/vesta-nemesis --sabotage --duration 20s)
