package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/vesta-go/vesta/segment"
)

// Errors of the package; a tag missing from the table is segment.ErrUnknownTag
// and a duplicate Create segment.ErrTagExists.
var (
	// ErrConfig: a Config field that cannot be used; the message names it.
	ErrConfig = errors.New("mysqlstore: invalid config")
)

// DefaultTable is Leaf's table name.
const DefaultTable = "leaf_alloc"

// Schema is Leaf's DDL for its table (%s is the table name).
const Schema = "CREATE TABLE IF NOT EXISTS `%s` (\n" +
	"  `biz_tag` varchar(128) NOT NULL DEFAULT '',\n" +
	"  `max_id` bigint(20) NOT NULL DEFAULT '1',\n" +
	"  `step` int(11) NOT NULL,\n" +
	"  `description` varchar(256) DEFAULT NULL,\n" +
	"  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,\n" +
	"  PRIMARY KEY (`biz_tag`)\n" +
	") ENGINE=InnoDB"

// Config configures a Store.
type Config struct {
	// DSN is go-sql-driver/mysql's data source name, e.g.
	// "user:password@tcp(db:3306)/leaf"; required. It holds a password:
	// keep it out of logs (Store never prints it).
	DSN string
	// Table is the table's name; empty is Leaf's leaf_alloc.
	Table string
	// MaxOpenConns caps the connections to the database; zero is 8.
	MaxOpenConns int
}

var tableName = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// Validate checks cfg, naming the bad field (never printing the DSN).
func (cfg Config) Validate() error {
	if cfg.DSN == "" {
		return fmt.Errorf("%w: DSN is empty; want one such as user:password@tcp(host:3306)/dbname", ErrConfig)
	}
	// The DSN holds the password: never shown, nor the parser's message,
	// which may quote a part of it that redact does not match.
	if _, err := mysql.ParseDSN(cfg.DSN); err != nil {
		return fmt.Errorf("%w: DSN (value not shown) is not a go-sql-driver/mysql DSN; want user:password@tcp(host:3306)/dbname", ErrConfig)
	}
	if cfg.Table != "" && !tableName.MatchString(cfg.Table) {
		t := cfg.Table
		if len(t) > 64 {
			t = t[:64] + "..."
		}
		return fmt.Errorf("%w: Table %q; want 1-64 characters of A-Z a-z 0-9 _, or empty for leaf_alloc", ErrConfig, t)
	}
	if cfg.MaxOpenConns < 0 {
		return fmt.Errorf("%w: MaxOpenConns %d is negative", ErrConfig, cfg.MaxOpenConns)
	}
	return nil
}

// redact keeps a DSN (and its password) out of an error message.
func redact(err error, dsn string) string {
	return strings.ReplaceAll(err.Error(), dsn, "<dsn>")
}

// Store is a segment.Store on a leaf_alloc table.
type Store struct {
	db    *sql.DB
	table string

	qUpdate, qUpdateStep, qSelect, qTags, qInsert string
}

var _ segment.Store = (*Store)(nil)

// Open makes a Store. It does not connect: a database down at start shows
// in the first call (and in segment.Sequencer's Ready), not here.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dc, _ := mysql.ParseDSN(cfg.DSN)
	dc.ParseTime = true // update_time as time.Time
	// Arguments inlined by the driver (it refuses for charsets where that is
	// unsafe): one round trip per statement instead of prepare, execute and
	// close, so a reservation costs four round trips.
	dc.InterpolateParams = true
	conn, err := mysql.NewConnector(dc)
	if err != nil {
		return nil, fmt.Errorf("%w: DSN: %s", ErrConfig, redact(err, cfg.DSN))
	}
	db := sql.OpenDB(conn)
	n := cfg.MaxOpenConns
	if n == 0 {
		n = 8
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(10 * time.Minute)
	t := cfg.Table
	if t == "" {
		t = DefaultTable
	}
	return &Store{db: db, table: t,
		// Leaf's statements (its IDAllocMapper), on the configured table.
		qUpdate:     "UPDATE `" + t + "` SET max_id = max_id + step WHERE biz_tag = ?",
		qUpdateStep: "UPDATE `" + t + "` SET max_id = max_id + ? WHERE biz_tag = ?",
		qSelect:     "SELECT max_id, step FROM `" + t + "` WHERE biz_tag = ?",
		qTags:       "SELECT biz_tag, max_id, step, description, update_time FROM `" + t + "` ORDER BY biz_tag",
		qInsert:     "INSERT INTO `" + t + "` (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)",
	}, nil
}

// DB is the underlying pool, for tests and benchmarks.
func (s *Store) DB() *sql.DB { return s.db }

// CreateTable creates the table with Leaf's DDL if it does not exist; an
// existing table (a Leaf deployment's) is left as is.
func (s *Store) CreateTable(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, fmt.Sprintf(Schema, s.table)); err != nil {
		return fmt.Errorf("mysqlstore: creating table %s: %w", s.table, err)
	}
	return nil
}

// Next reserves a range in Leaf's transaction: the UPDATE advancing max_id
// by the stored step (step 0) or by step, then the SELECT reading it back.
func (s *Store) Next(ctx context.Context, tag string, step int64) (segment.Range, error) {
	if step < 0 {
		return segment.Range{}, fmt.Errorf("mysqlstore: step %d is negative", step)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return segment.Range{}, fmt.Errorf("mysqlstore: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit a no-op
	if step == 0 {
		_, err = tx.ExecContext(ctx, s.qUpdate, tag)
	} else {
		_, err = tx.ExecContext(ctx, s.qUpdateStep, step, tag)
	}
	if err != nil {
		return segment.Range{}, fmt.Errorf("mysqlstore: tag %q: update: %w", tag, err)
	}
	var maxID, stored int64
	if err := tx.QueryRowContext(ctx, s.qSelect, tag).Scan(&maxID, &stored); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return segment.Range{}, fmt.Errorf("mysqlstore: tag %q: %w", tag, segment.ErrUnknownTag)
		}
		return segment.Range{}, fmt.Errorf("mysqlstore: tag %q: select: %w", tag, err)
	}
	if err := tx.Commit(); err != nil {
		return segment.Range{}, fmt.Errorf("mysqlstore: tag %q: commit: %w", tag, err)
	}
	if step == 0 {
		step = stored
	}
	return segment.RangeAt(maxID, step, stored), nil
}

// Tags lists the rows of the table, sorted by tag.
func (s *Store) Tags(ctx context.Context) ([]segment.TagInfo, error) {
	rows, err := s.db.QueryContext(ctx, s.qTags)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: listing tags: %w", err)
	}
	defer rows.Close()
	var out []segment.TagInfo
	for rows.Next() {
		var t segment.TagInfo
		var desc sql.NullString
		var updated sql.NullTime
		if err := rows.Scan(&t.Tag, &t.MaxID, &t.Step, &desc, &updated); err != nil {
			return nil, fmt.Errorf("mysqlstore: listing tags: %w", err)
		}
		t.Description, t.Updated = desc.String, updated.Time
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("mysqlstore: listing tags: %w", err)
	}
	return out, nil
}

// Create inserts a row as Leaf's documentation does; segment.ErrTagExists
// for a tag already there.
func (s *Store) Create(ctx context.Context, t segment.TagInfo) error {
	if err := t.Validate(); err != nil {
		return err
	}
	var desc any
	if t.Description != "" {
		desc = t.Description
	}
	_, err := s.db.ExecContext(ctx, s.qInsert, t.Tag, t.MaxID, t.Step, desc)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 { // ER_DUP_ENTRY
		return fmt.Errorf("mysqlstore: tag %q: %w", t.Tag, segment.ErrTagExists)
	}
	if err != nil {
		return fmt.Errorf("mysqlstore: creating tag %q: %w", t.Tag, err)
	}
	return nil
}

// Close closes the pool.
func (s *Store) Close() error { return s.db.Close() }
