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
# Every other module of the tree, found rather than listed, so that none is
# left out: the tools/ modules (chromedp for the page's browser tests,
# kin-openapi and speakeasy's linter for the strict validation and lint of
# the served OpenAPI document, the Kubernetes API types for the manifests,
# hdrhistogram for the load generator vesta-bench, bwmarrin/snowflake and
# sonyflake for the peer benchmarks, which make bench-peers runs), whose
# dependencies stay out of the product's go.mod, and nemesis, the fault injector's module. Each is
# vetted, linted and tested like the product module.
mapfile -t modules < <(find . -name go.mod -not -path ./go.mod -not -path '*/.*' -not -path '*/testdata/*' | sed 's|^\./||; s|/go.mod$||' | sort)

echo "== go vet"
$GO vet ./...
for m in "${modules[@]}"; do echo "-- $m"; (cd "$m" && $GO vet ./...); done
echo "== staticcheck"
$GO run "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}" ./...
for m in "${modules[@]}"; do echo "-- $m"; (cd "$m" && $GO run "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}" ./...); done

if [ "${1:-}" = "--lint-only" ]; then exit 0; fi

echo "== dependencies"
scripts/deps.sh

echo "== go test -race"
$GO test -race -count=1 -timeout 30m ./...
for m in "${modules[@]}"; do
  echo "== go test -race ($m)"
  (cd "$m" && $GO test -race -count=1 -timeout 10m ./...)
done

# bench-compare builds both sides (today's tree and a revision) and runs
# one short interleaved round of each measurement (about 10 s): a check that
# the comparison still works, not a measurement (timing on a shared machine
# is noise; the full run is for people: BENCHMARKS.md).
echo "== bench-compare -smoke"
make --no-print-directory bench-compare GO="$GO" ARGS=-smoke

# The nemesis's short seeded run (both providers, every fault kind, 10
# handovers each, about 6 minutes: exits 0 only with no repeat, no ID after a
# fence and every fault recovered), then its self-test: an unsafe fleet (two
# servers on one machine ID, two sequencers on one tag's range) that must
# show repeats of both, so that a checker that cannot fail would fail here.
echo "== nemesis --ci"
(cd nemesis && $GO run ./cmd/vesta-nemesis --ci)
echo "== nemesis --sabotage"
(cd nemesis && $GO run ./cmd/vesta-nemesis --sabotage --duration 20s)
