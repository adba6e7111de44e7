// Package composevalidate loads the compose files of deploy/ as Docker
// Compose v2 does: with compose-go, the loader behind `docker compose
// config` and `up`, on the command lines of docs/deploy.md (their -p and
// -f), with its schema validation and consistency checks. Then it checks
// what the kit promises: every service's resource limits (which rootful
// podman needs), every port on loopback and off make run's, the servers
// read-only as user 65532 with the token's secret and a graceful stop, and
// the files the monitoring services mount. podman-compose, the other tool
// the doc names, is tested in package deploy. A module of its own, so that
// the product's go.mod carries none of compose-go; scripts/test.sh runs its
// tests, and make compose-validate.
package composevalidate
