// Package sqlstore implements the platform's stores on SQL: SQLite (the embedded
// default, pure-Go modernc.org/sqlite in WAL mode) and PostgreSQL (pgx/v5). The
// SQL is written once where the dialects agree; the few places where they do not
// ask the dialect. Both backends pass the same contract suites (storetest).
package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	sqlitedriver "modernc.org/sqlite"  // registers the "sqlite" driver

	sqlite3 "modernc.org/sqlite/lib"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/datadir"
	"shortlink.dev/shared/migration"
	"shortlink.dev/shared/webhook"
)

//go:embed migrations/*.sql
var migrations embed.FS

type dialect int

const (
	sqlite dialect = iota
	postgres
)

// Store is the SQL implementation of the platform's stores: links,
// workspaces, domains, QR codes, galleries and webhooks with their outbox.
type Store struct {
	db      *sql.DB
	dialect dialect
	// Now is the clock; tests may replace it.
	Now func() time.Time
	// onEnqueue is called after a transaction stored webhook deliveries.
	onEnqueue atomic.Pointer[func()]
	// onChange is called after a transaction stored link changes (changes.go).
	onChange changeHook
	// stmts holds the SQLite statements insertRows prepares once (imports.go).
	stmts stmtCache
}

// Open opens the store named by databaseURL: a postgres:// URL selects
// PostgreSQL, an empty one SQLite in dataDir/shortlink.db. It applies pending
// migrations before it returns.
func Open(ctx context.Context, databaseURL, dataDir string) (*Store, error) {
	if databaseURL != "" {
		return OpenPostgres(ctx, databaseURL)
	}
	// The data folder holds the cookie secret and key hashes: the owner's alone.
	if err := datadir.Mkdir(dataDir); err != nil {
		return nil, fmt.Errorf("cannot create the data folder: %w", err)
	}
	return OpenSQLite(ctx, filepath.Join(dataDir, "shortlink.db"))
}

// OpenSQLite opens (creating it if needed) the SQLite database file at path.
// Several processes may open the same file: WAL lets readers run beside the one
// writer, busy_timeout makes writers wait for each other, and every transaction
// takes the write lock at its start so that none fails half-way.
func OpenSQLite(ctx context.Context, path string) (*Store, error) {
	db, err := OpenSQLiteDB(ctx, path)
	if err != nil {
		return nil, err
	}
	return open(ctx, db, sqlite)
}

// OpenSQLiteDB opens a connection pool on the SQLite file at path with the
// settings every store on that file shares (WAL, busy_timeout, foreign keys,
// transactions that take the write lock at their start), and each of pragmas
// (like "wal_autocheckpoint(0)") on every connection; the analytics plane's
// embedded click store opens the control plane's file with it.
func OpenSQLiteDB(ctx context.Context, path string, pragmas ...string) (*sql.DB, error) {
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)" +
		"&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	for _, p := range pragmas {
		dsn += "&_pragma=" + p
	}
	// SQLite gives its -wal and -shm files the mode of the database file, so
	// that file is made 0600 before SQLite opens it; files an older version
	// left readable by others are tightened.
	if err := datadir.Create(path); err != nil {
		return nil, fmt.Errorf("cannot open SQLite %s: %w", path, err)
	}
	if err := datadir.Tighten(path+"-wal", path+"-shm", path+"-journal"); err != nil {
		return nil, fmt.Errorf("cannot open SQLite %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("cannot open SQLite %s: %w", path, err)
	}
	db.SetMaxOpenConns(8)
	if err := pingSQLite(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot open SQLite %s: %w", path, err)
	}
	return db, nil
}

// pingSQLite opens the first connection. Turning a new file to WAL needs an
// exclusive lock, and when several processes start on a new file together
// SQLite may answer SQLITE_BUSY at once instead of waiting busy_timeout: retry
// for as long as busy_timeout would have waited.
func pingSQLite(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := db.PingContext(ctx)
		var e *sqlitedriver.Error
		if err == nil || !errors.As(err, &e) || e.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// OpenPostgres connects to PostgreSQL.
func OpenPostgres(ctx context.Context, url string) (*Store, error) {
	db, err := sql.Open("pgx", withConnectTimeout(url))
	if err != nil {
		return nil, fmt.Errorf("cannot open PostgreSQL: %w", err)
	}
	db.SetMaxOpenConns(20)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return open(ctx, db, postgres)
}

func open(ctx context.Context, db *sql.DB, d dialect) (*Store, error) {
	s := &Store{db: db, dialect: d, Now: time.Now}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot reach the database: %w", err)
	}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// SQLite's LOWER folds ASCII letters only: searching "café" would miss "CAFÉ",
// and even "CAFÉ" would miss itself, as the search text is lowered in Go.
// unicode_lower folds like strings.ToLower; PostgreSQL's LOWER needs no help.
func init() {
	sqlitedriver.MustRegisterDeterministicScalarFunction("unicode_lower", 1,
		func(_ *sqlitedriver.FunctionContext, args []driver.Value) (driver.Value, error) {
			if v, ok := args[0].(string); ok {
				return strings.ToLower(v), nil
			}
			return args[0], nil
		})
}

// lower returns the SQL that lowers expr for a case-insensitive comparison
// with a string lowered by strings.ToLower.
func (s *Store) lower(expr string) string {
	if s.dialect == sqlite {
		return "unicode_lower(" + expr + ")"
	}
	return "LOWER(" + expr + ")"
}

// Close closes the database.
func (s *Store) Close() error {
	s.stmts.close()
	return s.db.Close()
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// migrate applies, each in its own transaction, the embedded migrations whose
// version is not recorded yet. Concurrent starters wait for each other.
func (s *Store) migrate(ctx context.Context) error {
	files, err := migration.Load(migrations, "migrations")
	if err != nil {
		return err
	}
	return migration.ApplySQL(ctx, s.db, "schema_migrations", files, s.lockMigrations)
}

// lockMigrations makes, within tx, concurrent starters migrate one at a time.
// SQLite needs nothing: its transactions take the database's write lock.
func (s *Store) lockMigrations(ctx context.Context, tx *sql.Tx) error {
	if s.dialect != postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(8412)`)
	return err
}

// inTx runs fn in a transaction, committed when fn returns nil. The webhook
// messages ctx carries (webhook.WithMessages) are stored in the outbox in
// the same transaction, so that a change and its events commit together;
// so are the link changes it carries (bus.WithChanges, changes.go) and its
// audit entries (audit.With, audit.go).
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	msgs, taken := webhook.TakeMessages(ctx)
	enqueued := false
	if len(msgs) > 0 {
		if enqueued, err = s.writeOutbox(ctx, tx, msgs); err != nil {
			tx.Rollback()
			return err
		}
	}
	entries, recorded := audit.Take(ctx)
	if len(entries) > 0 {
		if err := s.writeAudit(ctx, tx, entries); err != nil {
			tx.Rollback()
			return err
		}
	}
	changes, stored := bus.TakeChanges(ctx)
	var changeIDs []string
	if len(changes) > 0 {
		if changeIDs, err = s.writeChanges(ctx, tx, changes); err != nil {
			tx.Rollback()
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	taken()
	recorded()
	if enqueued {
		s.notifyEnqueued()
	}
	if len(changeIDs) > 0 {
		stored(changeIDs)
		s.notifyChanged()
	}
	return nil
}

// lockWorkspace serialises, within tx, the writers that check a workspace's
// limits. SQLite needs nothing: its transactions take the database's write lock.
func (s *Store) lockWorkspace(ctx context.Context, tx *sql.Tx, workspaceID string) error {
	if s.dialect != postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT id FROM workspaces WHERE id = $1 FOR UPDATE`, workspaceID)
	return err
}

// isUniqueViolation reports whether err is a unique-constraint failure.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505"
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func nullMicros(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: micros(*t), Valid: true}
}

func timePtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

func nullString(p *string) sql.NullString {
	if p == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *p, Valid: true}
}

func stringPtr(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	s := v.String
	return &s
}

// inList returns the placeholders "$1, $2, …" of the values and the values
// as query arguments, for an IN (…) list.
func inList(values []string) (string, []any) {
	marks := make([]string, len(values))
	args := make([]any, len(values))
	for i, v := range values {
		marks[i] = "$" + strconv.Itoa(i+1)
		args[i] = v
	}
	return strings.Join(marks, ", "), args
}
