# The two commands of the README: `make run` and `make test`.
GO ?= go

.PHONY: run test lint bench build fuzz image nemesis

# Runs the service: `vesta serve` (RPC on 127.0.0.1:7070, HTTP on 127.0.0.1:7080) on
# machine ID 1023, chosen here in the open: there is no default machine ID, and
# a second server beside it needs its own (--machine 1022, or Redis leases).
run:
	$(GO) run ./cmd/vesta serve --machine 1023

# Everything CI runs: format, vet, staticcheck, then all tests with -race.
test:
	scripts/test.sh

lint:
	scripts/test.sh --lint-only

# bin/vesta, stamped with `git describe` (VERSION=v1.2.3 to choose) and the
# VCS revision (-buildvcs=auto: recorded in a git checkout, even where
# GOFLAGS turns it off; skipped in an export without .git).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
build:
	$(GO) build -buildvcs=auto -ldflags "-X github.com/vesta-go/vesta/internal/buildinfo.version=$(VERSION)" -o bin/vesta ./cmd/vesta

# The container image of deploy/Containerfile, FROM scratch: the static binary,
# CA certificates, user 65532 (podman, or docker when its daemon runs;
# IMAGE=registry/vesta:tag to name it).
IMAGE ?= localhost/vesta:latest
image:
	scripts/image.sh $(IMAGE)

# The deploy kit's checks of docs/deploy.md, each needing no install and no
# cluster: systemd's parser on deploy/systemd/vesta.service (vesta built into
# a temporary directory for its ExecStart), the manifests of deploy/k8s
# decoded strictly into the Kubernetes API types (the module tools/k8svalidate),
# and the compose files loaded as Docker Compose v2 does, on the doc's command
# lines (the module tools/composevalidate, with compose-go). The modules' first
# run downloads their dependencies.
.PHONY: systemd-verify k8s-validate compose-validate
systemd-verify:
	GO=$(GO) scripts/systemd-verify.sh

k8s-validate:
	cd tools/k8svalidate && $(GO) test -count=1 ./...

compose-validate:
	cd tools/composevalidate && $(GO) test -count=1 ./...

# Go benchmarks of the generator; see BENCHMARKS.md for the side-by-side runs.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./core/

# vesta's embedded generator beside bwmarrin/snowflake and sonyflake, in the
# separate module tools/peerbench (its first run downloads those two modules).
.PHONY: bench-peers
bench-peers:
	cd tools/peerbench && $(GO) test -run '^$$' -bench . -count 1 .

# Today's tree against a revision (default: the last tag, else main~1) and
# against the anchors (bwmarrin/snowflake, sonyflake, Redis INCR through
# rueidis and go-redis, a trivial echo handler), interleaved in one run,
# printed as ratios: the module tools/benchcompare (BENCHMARKS.md takes its
# tables). Needs redis-server and wrk (scripts/deps.sh).
# make bench-compare ARGS='-rev v1.2.0 -rounds 3 -duration 3s'; ARGS=-smoke: ~10 s (CI).
.PHONY: bench-compare
bench-compare:
	cd tools/benchcompare && $(GO) run . $(ARGS)

# The load generator vesta-bench (BENCHMARKS.md), a module of its own
# (tools/vesta-bench) so that the product's go.mod and binary carry none of it.
.PHONY: bench-load
bench-load:
	$(GO) -C tools/vesta-bench build -o ../../bin/vesta-bench .

# Short fuzzing of every fuzz target (FUZZTIME=30s make fuzz).
fuzz:
	scripts/fuzz.sh

# The nemesis: a fleet of real processes under seeded faults, a ledger of
# every ID and number; exits 0 only when none repeated (needs root, Linux).
# make nemesis ARGS='--seed 7 --duration 3m'
nemesis:
	scripts/deps.sh
	cd nemesis && $(GO) run ./cmd/vesta-nemesis $(ARGS)
