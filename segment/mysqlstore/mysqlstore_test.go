package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/vesta-go/vesta/internal/testkit/errtest"
	"github.com/vesta-go/vesta/internal/testkit/mariadbtest"
	"github.com/vesta-go/vesta/internal/testkit/segtest"
	"github.com/vesta-go/vesta/internal/testkit/waittest"
	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/mysqlstore"
)

// leafDDL is the table as Leaf's README creates it, byte for byte but the
// database name: the store must take such a table as is.
const leafDDL = "CREATE TABLE `leaf_alloc` (" +
	"`biz_tag` varchar(128)  NOT NULL DEFAULT ''," +
	"`max_id` bigint(20) NOT NULL DEFAULT '1'," +
	"`step` int(11) NOT NULL," +
	"`description` varchar(256)  DEFAULT NULL," +
	"`update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP," +
	"PRIMARY KEY (`biz_tag`)" +
	") ENGINE=InnoDB"

// startDB starts MariaDB with an empty database "leaf" and returns the
// server and a pool on that database.
func startDB(t testing.TB) (*mariadbtest.Server, *sql.DB) {
	t.Helper()
	srv := mariadbtest.Start(t)
	return srv, srv.Database(t, "leaf")
}

func openStore(t testing.TB, dsn string) *mysqlstore.Store {
	t.Helper()
	st, err := mysqlstore.Open(mysqlstore.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// leafNext is Leaf's own transaction (its IDAllocMapper's updateMaxId and
// getLeafAlloc), answering the range Leaf would issue: [max_id-step, max_id).
func leafNext(ctx context.Context, db *sql.DB, tag string) (segment.Range, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return segment.Range{}, err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?", tag); err != nil {
		return segment.Range{}, err
	}
	var maxID, step int64
	if err := tx.QueryRowContext(ctx, "SELECT max_id, step FROM leaf_alloc WHERE biz_tag = ?", tag).Scan(&maxID, &step); err != nil {
		return segment.Range{}, err
	}
	return segment.Range{First: maxID - step, Last: maxID - 1, Step: step}, tx.Commit()
}

// All the store tests share one server: starting MariaDB costs seconds.
func TestMariaDB(t *testing.T) {
	srv, db := startDB(t)
	t.Run("ExistingLeafTable", func(t *testing.T) { testExistingLeafTable(t, srv, db) })
	t.Run("CreateAndErrors", func(t *testing.T) { testCreateAndErrors(t, srv, db) })
	t.Run("Ledger", func(t *testing.T) { testLedger(t, srv, db) })
	t.Run("KilledMidRun", func(t *testing.T) { testKilledMidRun(t, srv, db) })
}

// A Leaf deployment's table, with rows Leaf created and used, is served as
// is: the next numbers follow Leaf's, and Leaf servers still running on the
// same table never get a range overlapping vesta's.
func testExistingLeafTable(t *testing.T, srv *mariadbtest.Server, db *sql.DB) {
	ctx := context.Background()
	for _, q := range []string{
		leafDDL,
		"insert into leaf_alloc(biz_tag, max_id, step, description) values('leaf-segment-test', 1, 2000, 'Test leaf Segment Mode Get Id')",
		// A tag Leaf has served: its servers issued up to 4000.
		"insert into leaf_alloc(biz_tag, max_id, step) values('order', 4001, 2000)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st := openStore(t, srv.DSN("leaf"))
	if err := st.CreateTable(ctx); err != nil { // IF NOT EXISTS: a no-op here
		t.Fatal(err)
	}
	tags, err := st.Tags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tags) != 2 || tags[0].Tag != "leaf-segment-test" || tags[0].Description != "Test leaf Segment Mode Get Id" ||
		tags[0].MaxID != 1 || tags[0].Step != 2000 || tags[0].Updated.IsZero() || tags[1].Tag != "order" || tags[1].Description != "" {
		t.Fatalf("Tags = %+v", tags)
	}
	is := segtest.Open(t, st, segment.DefaultConfig())
	if n, err := is.Next(ctx, "leaf-segment-test"); err != nil || n != 1 {
		t.Fatalf("first number = %d, %v; Leaf's is 1", n, err)
	}
	if n, err := is.Next(ctx, "order"); err != nil || n != 4001 {
		t.Fatalf("next number of a used tag = %d, %v; want 4001", n, err)
	}
	var maxID int64
	if err := db.QueryRow("SELECT max_id FROM leaf_alloc WHERE biz_tag = 'order'").Scan(&maxID); err != nil || maxID != 6001 {
		t.Fatalf("max_id = %d, %v; want 6001", maxID, err)
	}

	// Leaf and vesta reserving ranges of one tag at once: no overlap.
	var mu sync.Mutex
	var ranges []segment.Range
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				var r segment.Range
				var err error
				switch {
				case g%2 == 0:
					r, err = leafNext(ctx, db, "order")
				case i%2 == 0:
					r, err = st.Next(ctx, "order", 0)
				default:
					r, err = st.Next(ctx, "order", int64(500*(1+i%3))) // dynamic steps
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ranges = append(ranges, r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.SortFunc(ranges, func(a, b segment.Range) int { return int(a.First - b.First) })
	for i := 1; i < len(ranges); i++ {
		if ranges[i].First <= ranges[i-1].Last {
			t.Fatalf("ranges overlap: %+v and %+v", ranges[i-1], ranges[i])
		}
	}
	if ranges[0].First != 6001 {
		t.Fatalf("first range %+v, want it to start at 6001", ranges[0])
	}
}

func testCreateAndErrors(t *testing.T, srv *mariadbtest.Server, db *sql.DB) {
	ctx := context.Background()
	st, err := mysqlstore.Open(mysqlstore.Config{DSN: srv.DSN("leaf"), Table: "vesta_alloc"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateTable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, segment.TagInfo{Tag: "inv", MaxID: 1000, Step: 50, Description: "invoices"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, segment.TagInfo{Tag: "inv", MaxID: 1, Step: 1}); !errors.Is(err, segment.ErrTagExists) {
		t.Fatalf("duplicate Create = %v", err)
	}
	if err := st.Create(ctx, segment.TagInfo{Tag: "bad tag", MaxID: 1, Step: 1}); !errors.Is(err, segment.ErrInvalidTag) {
		t.Fatalf("Create of a bad tag = %v", err)
	}
	if err := st.Create(ctx, segment.TagInfo{Tag: "zero", MaxID: 1, Step: 0}); !errors.Is(err, segment.ErrConfig) {
		t.Fatalf("Create with step 0 = %v", err)
	}
	r, err := st.Next(ctx, "inv", 0)
	if err != nil || r != (segment.Range{First: 1000, Last: 1049, Step: 50}) {
		t.Fatalf("Next = %+v, %v", r, err)
	}
	if _, err := st.Next(ctx, "nope", 0); !errors.Is(err, segment.ErrUnknownTag) {
		t.Fatalf("Next of an unknown tag = %v", err)
	}
	if _, err := st.Next(ctx, "nope", 10); !errors.Is(err, segment.ErrUnknownTag) {
		t.Fatalf("Next(10) of an unknown tag = %v", err)
	}
	// A row whose step an operator set to 0 is refused by the issuer, not
	// issued from.
	if _, err := db.Exec("INSERT INTO vesta_alloc(biz_tag, max_id, step) VALUES ('broken', 1, 0)"); err != nil {
		t.Fatal(err)
	}
	is := segtest.Open(t, st, segment.DefaultConfig())
	if _, err := is.Next(ctx, "broken"); !errors.Is(err, segment.ErrBadRange) {
		t.Fatalf("Next of a step-0 row = %v", err)
	}

	for _, tc := range []struct {
		name  string
		cfg   mysqlstore.Config
		field string
	}{
		{"no DSN", mysqlstore.Config{}, "DSN"},
		{"bad DSN", mysqlstore.Config{DSN: "root:s3cret@tcp(x:1"}, "DSN"},
		{"bad table", mysqlstore.Config{DSN: srv.DSN("leaf"), Table: "leaf`; DROP"}, "Table"},
		{"negative conns", mysqlstore.Config{DSN: srv.DSN("leaf"), MaxOpenConns: -1}, "MaxOpenConns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mysqlstore.Open(tc.cfg)
			if !errtest.Wraps(err, mysqlstore.ErrConfig, tc.field) {
				t.Fatalf("Open = %v; want ErrConfig naming %s", err, tc.field)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error prints the password: %v", err)
			}
		})
	}
}

// Several issuers, each with its own pool, on one table, 16 tags, 5 M
// numbers with small steps so that reservations contend.
func testLedger(t *testing.T, srv *mariadbtest.Server, _ *sql.DB) {
	iss, tags, n := segtest.StoreLedger(t, func() segment.Store { return openStore(t, srv.DSN("leaf")) })
	var fetched int64
	for _, is := range iss {
		for _, tag := range tags {
			s, _ := is.Stats(tag)
			fetched += s.RangesFetched
		}
	}
	t.Logf("%d numbers from %d ranges, 0 repeats", n, fetched)
	if n < 5_000_000 {
		t.Fatalf("ledger of %d numbers", n)
	}
}

// MariaDB killed mid-run: buffered numbers keep coming, then clean
// ErrUnavailable, Ready says so; after a restart the issuer recovers by
// itself. No number repeats through it all.
func testKilledMidRun(t *testing.T, srv *mariadbtest.Server, _ *sql.DB) {
	ctx := context.Background()
	st := openStore(t, srv.DSN("leaf"))
	if err := st.Create(ctx, segment.TagInfo{Tag: "kill", MaxID: 1, Step: 1000}); err != nil {
		t.Fatal(err)
	}
	cfg := segment.DefaultConfig()
	cfg.Preload = []string{"kill"}
	cfg.RetryBackoff = 50 * time.Millisecond
	cfg.StoreTimeout = 3 * time.Second
	is := segtest.Open(t, st, cfg)
	seen := map[int64]bool{}
	prev := int64(0)
	take := func() error {
		n, err := is.Next(ctx, "kill")
		if err != nil {
			return err
		}
		if seen[n] || n <= prev {
			t.Fatalf("%d after %d (seen before: %v)", n, prev, seen[n])
		}
		seen[n], prev = true, n
		return nil
	}
	for range 300 { // past the threshold: the second range comes
		if err := take(); err != nil {
			t.Fatal(err)
		}
	}
	waittest.Until(t, "the prefetch", func() bool { s, _ := is.Stats("kill"); return s.RangesFetched == 2 })
	srv.Kill()
	s, _ := is.Stats("kill")
	for i := int64(0); i < s.Remaining; i++ {
		if err := take(); err != nil {
			t.Fatalf("buffered number %d of %d refused: %v", i, s.Remaining, err)
		}
	}
	var err error
	waittest.Until(t, "ErrUnavailable", func() bool { err = take(); return err != nil })
	if !errors.Is(err, segment.ErrUnavailable) {
		t.Fatalf("with MariaDB killed and buffers empty: %v", err)
	}
	if err := is.Ready(); !errors.Is(err, segment.ErrUnavailable) {
		t.Fatalf("Ready = %v", err)
	}
	srv.Restart()
	waittest.Until(t, "recovery", func() bool { return is.Ready() == nil })
	if err := take(); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	t.Logf("%d numbers, up to %d", len(seen), prev)
}
