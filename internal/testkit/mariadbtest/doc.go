// Package mariadbtest starts a real MariaDB server (Debian's
// mariadb-server: mariadbd and mariadb-install-db) for tests: a data
// directory initialised in a temporary directory, listening on a free port
// of 127.0.0.1, user root without a password, stopped when the test ends.
// Tests can stop, kill (SIGKILL, as a crash) and restart it on the same
// port and data, to see a store go away and come back under a client.
//
// The process is package proctest's: stopped in t.Cleanup, Stop, Kill and
// Restart idempotent and waiting.
//
// The programs must be installed; scripts/deps.sh installs mariadb-server.
// A missing binary fails the test rather than skipping it, so a CI run
// that lacks it cannot pass unnoticed. Under go test -short (package testkit's inner
// loop) every test on it skips.
package mariadbtest
