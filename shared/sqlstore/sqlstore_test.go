package sqlstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
)

// The PostgreSQL suites run against the server at SHORTLINK_TEST_POSTGRES_URL
// (a URL: postgres://user@host:5432/postgres?sslmode=disable), in a database of
// their own that they drop at the end. Without it they are skipped, unless
// SHORTLINK_REQUIRE_INTEGRATION=1 (CI), where a skip would hide a failure.
const (
	postgresURLEnv        = "SHORTLINK_TEST_POSTGRES_URL"
	requireIntegrationEnv = "SHORTLINK_REQUIRE_INTEGRATION"
)

func TestSQLite(t *testing.T) {
	open := func(t *testing.T) storetest.ClickLimitStores {
		return mustOpenSQLite(t, filepath.Join(t.TempDir(), "shortlink.db"))
	}
	runSuites(t, open)
}

// runSuites runs every contract suite on the stores open returns.
func runSuites(t *testing.T, open func(t *testing.T) storetest.ClickLimitStores) {
	stores := func(t *testing.T) storetest.Stores { return open(t) }
	t.Run("Links", func(t *testing.T) { storetest.Links(t, stores) })
	t.Run("ClickLimits", func(t *testing.T) { storetest.ClickLimits(t, open) })
	t.Run("ClickCounts", func(t *testing.T) {
		storetest.ClickCounts(t, func(t *testing.T) storetest.ClickCountStores { return pipelineCounts{open(t).(*sqlstore.Store)} })
	})
	t.Run("Workspaces", func(t *testing.T) { storetest.Workspaces(t, stores) })
	t.Run("Domains", func(t *testing.T) { storetest.Domains(t, stores) })
	t.Run("QRCodes", func(t *testing.T) { storetest.QRCodes(t, stores) })
	t.Run("Galleries", func(t *testing.T) { storetest.Galleries(t, stores) })
	t.Run("Webhooks", func(t *testing.T) {
		storetest.Webhooks(t, func(t *testing.T) storetest.WebhookStores { return open(t).(*sqlstore.Store) })
	})
	t.Run("Changes", func(t *testing.T) {
		storetest.Changes(t, func(t *testing.T) storetest.ChangeStores { return open(t).(*sqlstore.Store) })
	})
	t.Run("Members", func(t *testing.T) {
		storetest.Members(t, func(t *testing.T) storetest.MemberStores { return open(t).(*sqlstore.Store) })
	})
	t.Run("Billing", func(t *testing.T) {
		storetest.Billing(t, func(t *testing.T) storetest.BillingStores { return open(t).(*sqlstore.Store) })
	})
}

// TestSQLiteSharedFile runs the suites with every subtest on one database
// file, as the services share one: the suites must not see each other's rows.
func TestSQLiteSharedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shortlink.db")
	open := func(t *testing.T) storetest.ClickLimitStores { return mustOpenSQLite(t, path) }
	runSuites(t, open)
}

func TestPostgres(t *testing.T) {
	dbURL := mustCreatePostgresDB(t)
	open := func(t *testing.T) storetest.ClickLimitStores { return mustOpenPostgres(t, dbURL) }
	runSuites(t, open)
}

// TestPersKeySQLite runs the suites of personal keys and of links' authors
// on SQLite.
func TestPersKeySQLite(t *testing.T) {
	open := func(t *testing.T) *sqlstore.Store {
		return mustOpenSQLite(t, filepath.Join(t.TempDir(), "shortlink.db"))
	}
	t.Run("PersonalKeys", func(t *testing.T) {
		storetest.PersonalKeys(t, func(t *testing.T) storetest.PersonalKeyStores { return open(t) })
	})
	t.Run("LinkAuthors", func(t *testing.T) {
		storetest.LinkAuthors(t, func(t *testing.T) storetest.Stores { return open(t) })
	})
}

// TestPersKeyPostgres runs them on PostgreSQL.
func TestPersKeyPostgres(t *testing.T) {
	dbURL := mustCreatePostgresDB(t)
	open := func(t *testing.T) *sqlstore.Store { return mustOpenPostgres(t, dbURL) }
	t.Run("PersonalKeys", func(t *testing.T) {
		storetest.PersonalKeys(t, func(t *testing.T) storetest.PersonalKeyStores { return open(t) })
	})
	t.Run("LinkAuthors", func(t *testing.T) {
		storetest.LinkAuthors(t, func(t *testing.T) storetest.Stores { return open(t) })
	})
}

// TestWsFairSQLite runs the suite of fairness across workspaces on SQLite,
// each subtest on a database of its own.
func TestWsFairSQLite(t *testing.T) {
	storetest.WorkspaceFairness(t, func(t *testing.T) storetest.WebhookStores {
		return mustOpenSQLite(t, filepath.Join(t.TempDir(), "shortlink.db"))
	})
}

// TestWsFairPostgres runs the suite of fairness across workspaces on
// PostgreSQL, each subtest on a database of its own.
func TestWsFairPostgres(t *testing.T) {
	storetest.WorkspaceFairness(t, func(t *testing.T) storetest.WebhookStores {
		return mustOpenPostgres(t, mustCreatePostgresDB(t))
	})
}

func TestSQLiteMigrate(t *testing.T) {
	t.Run("OKTwice", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "shortlink.db")
		first := mustOpenSQLite(t, path)
		w := storetest.MustCreateWorkspace(t, first)
		if err := first.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		second := mustOpenSQLite(t, path)
		if _, err := second.GetWorkspace(context.Background(), w.ID); err != nil {
			t.Fatalf("workspace after reopening: %v", err)
		}
		wantMigrations(t, mustOpenSQL(t, "sqlite", "file:"+path))
	})

	t.Run("OKConcurrent", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "shortlink.db")
		openConcurrently(t, func() (*sqlstore.Store, error) {
			return sqlstore.OpenSQLite(context.Background(), path)
		})
		wantMigrations(t, mustOpenSQL(t, "sqlite", "file:"+path))
	})
}

func TestPostgresMigrate(t *testing.T) {
	t.Run("OKTwice", func(t *testing.T) {
		dbURL := mustCreatePostgresDB(t)
		first := mustOpenPostgres(t, dbURL)
		w := storetest.MustCreateWorkspace(t, first)
		if err := first.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		second := mustOpenPostgres(t, dbURL)
		if _, err := second.GetWorkspace(context.Background(), w.ID); err != nil {
			t.Fatalf("workspace after reopening: %v", err)
		}
		wantMigrations(t, mustOpenSQL(t, "pgx", dbURL))
	})

	t.Run("OKConcurrent", func(t *testing.T) {
		dbURL := mustCreatePostgresDB(t)
		openConcurrently(t, func() (*sqlstore.Store, error) {
			return sqlstore.OpenPostgres(context.Background(), dbURL)
		})
		wantMigrations(t, mustOpenSQL(t, "pgx", dbURL))
	})
}

// openConcurrently opens a new database from several goroutines at once, as
// services starting together do, and checks that every store works.
func openConcurrently(t *testing.T, open func() (*sqlstore.Store, error)) {
	t.Helper()
	const n = 4
	stores := make([]*sqlstore.Store, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stores[i], errs[i] = open()
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
			continue
		}
		s := stores[i]
		t.Cleanup(func() { s.Close() })
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, s := range stores {
		w := storetest.MustCreateWorkspace(t, s)
		storetest.MustCreateLink(t, s, storetest.NewLink(w.ID, storetest.UniqueDomain(), "ok"), -1)
	}
}

// wantMigrations checks that every migration file is recorded once.
func wantMigrations(t *testing.T, db *sql.DB) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no migration files found: %v", err)
	}
	var want []string
	for _, f := range files {
		v, err := strconv.Atoi(strings.SplitN(filepath.Base(f), "_", 2)[0])
		if err != nil {
			t.Fatalf("migration %s: %v", f, err)
		}
		want = append(want, strconv.Itoa(v))
	}
	sort.Strings(want)

	rows, err := db.Query(`SELECT version FROM schema_migrations`)
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatalf("read schema_migrations: %v", err)
		}
		got = append(got, strconv.FormatInt(v, 10))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("recorded migrations: got [%s], want [%s]", strings.Join(got, ","), strings.Join(want, ","))
	}
}

func mustOpenSQLite(t testing.TB, path string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatalf("open SQLite: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustOpenPostgres(t testing.TB, dbURL string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.OpenPostgres(context.Background(), dbURL)
	if err != nil {
		t.Fatalf("open PostgreSQL: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mustOpenSQL opens the database for a direct look at its tables.
func mustOpenSQL(t testing.TB, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("open %s: %v", driver, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// mustCreatePostgresDB creates an empty database on the test server and returns
// its URL. The database is dropped, connections and all, when t ends.
func mustCreatePostgresDB(t testing.TB) string {
	t.Helper()
	server := os.Getenv(postgresURLEnv)
	if server == "" {
		if os.Getenv(requireIntegrationEnv) == "1" {
			t.Fatalf("%s=1 but %s is not set: set it to a PostgreSQL server URL, like "+
				"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", requireIntegrationEnv, postgresURLEnv)
		}
		t.Skipf("%s is not set: the PostgreSQL suites are skipped", postgresURLEnv)
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL, got %q", postgresURLEnv, server)
	}
	admin := mustOpenSQL(t, "pgx", server)
	// rand.Text is base32: lower-cased, a valid unquoted identifier after "st_".
	name := "st_" + strings.ToLower(rand.Text())
	if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("create database %s on %s: %v", name, u.Redacted(), err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}
