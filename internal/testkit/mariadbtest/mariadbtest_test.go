package mariadbtest_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/vesta-go/vesta/internal/testkit/mariadbtest"
	"github.com/vesta-go/vesta/internal/testkit/proctest"
)

// The server answers SQL, keeps its data across a kill and a restart on
// the same port, and refuses connections while down.
func TestStartKillRestart(t *testing.T) {
	srv := mariadbtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := sql.Open("mysql", srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"CREATE DATABASE t", "CREATE TABLE t.x (v INT) ENGINE=InnoDB", "INSERT INTO t.x VALUES (42)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	srv.Kill()
	if srv.Running() {
		t.Fatal("Running after Kill")
	}
	if err := db.PingContext(ctx); err == nil {
		t.Fatal("ping answered with the server killed")
	}
	srv.Restart()
	var v int
	if err := db.QueryRowContext(ctx, "SELECT v FROM t.x").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: %d, %v; want 42", v, err)
	}
}

// Without mariadb-install-db on PATH (mariadbd is found in /usr/sbin too)
// Start fails naming it and scripts/deps.sh.
func TestMissingBinaryFailsPointingAtDeps(t *testing.T) {
	proctest.MissingBinary(t, "mariadb", func(tb testing.TB) { mariadbtest.Start(tb) })
}
