package sqlstore_test

import (
	"path/filepath"
	"testing"

	"shortlink.dev/shared/storetest"
)

// The idempotency suite on both dialects, each on one database that its
// subtests share (every subtest makes its own workspaces).

func TestIdempotencySQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shortlink.db")
	storetest.Idempotency(t, func(t *testing.T) storetest.IdempotencyStores { return mustOpenSQLite(t, path) })
}

func TestIdempotencyPostgres(t *testing.T) {
	dbURL := mustCreatePostgresDB(t)
	storetest.Idempotency(t, func(t *testing.T) storetest.IdempotencyStores { return mustOpenPostgres(t, dbURL) })
}
