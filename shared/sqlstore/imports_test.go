package sqlstore_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"shortlink.dev/shared/sqlstore"
)

// TestImportArraysPostgres: an import's multi-row insert on PostgreSQL
// (one array a column) writes each value as it was given, sql.NullString
// and sql.NullInt64 that are not Valid as SQL NULL, among plain values of
// their column; a value of another type than its column's is refused,
// naming the column, and nothing is written.
func TestImportArraysPostgres(t *testing.T) {
	ctx := context.Background()
	db := mustOpenSQL(t, "pgx", mustCreatePostgresDB(t))
	// table begins a transaction, rolled back at the end of t, with an
	// empty temporary table of a column of each kind.
	table := func(t *testing.T) *sql.Tx {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback() })
		if _, err := tx.ExecContext(ctx, `CREATE TEMPORARY TABLE arr (i bigint, s text, n bigint, b boolean)`); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	const insert = `INSERT INTO arr (i, s, n, b)`

	t.Run("OK", func(t *testing.T) {
		tx := table(t)
		rows := [][]any{
			{int64(0), "a", int64(10), true},
			{int64(1), sql.NullString{String: "not written", Valid: false}, sql.NullInt64{Int64: 99, Valid: false}, false},
			{int64(2), sql.NullString{String: "c", Valid: true}, 12, true},
			{3, "", sql.NullInt64{Int64: 0, Valid: true}, false},
			{int64(4), sql.NullString{}, sql.NullInt64{Int64: -5, Valid: true}, true},
		}
		if err := sqlstore.InsertArrays(ctx, tx, insert, rows); err != nil {
			t.Fatal(err)
		}
		type row struct {
			s sql.NullString
			n sql.NullInt64
			b bool
		}
		want := []row{
			{sql.NullString{String: "a", Valid: true}, sql.NullInt64{Int64: 10, Valid: true}, true},
			{sql.NullString{}, sql.NullInt64{}, false},
			{sql.NullString{String: "c", Valid: true}, sql.NullInt64{Int64: 12, Valid: true}, true},
			{sql.NullString{String: "", Valid: true}, sql.NullInt64{Int64: 0, Valid: true}, false},
			{sql.NullString{}, sql.NullInt64{Int64: -5, Valid: true}, true},
		}
		got, err := tx.QueryContext(ctx, `SELECT i, s, n, b FROM arr ORDER BY i`)
		if err != nil {
			t.Fatal(err)
		}
		defer got.Close()
		i := 0
		for ; got.Next(); i++ {
			var (
				id int64
				r  row
			)
			if err := got.Scan(&id, &r.s, &r.n, &r.b); err != nil {
				t.Fatal(err)
			}
			if id != int64(i) || i >= len(want) || r != want[i] {
				t.Errorf("row %d: got %d %+v", i, id, r)
			}
		}
		if err := got.Err(); err != nil {
			t.Fatal(err)
		}
		if i != len(want) {
			t.Errorf("got %d rows, want %d", i, len(want))
		}
	})

	for _, tc := range []struct {
		name    string
		rows    [][]any
		wantErr string
	}{
		{"ErrIntegerAmongStrings", [][]any{
			{int64(0), "a", int64(1), true},
			{int64(1), int64(2), int64(1), true},
		}, "column 1: int64 among strings"},
		{"ErrStringAmongIntegers", [][]any{
			{int64(0), "a", sql.NullInt64{}, true},
			{int64(1), "b", "3", true},
		}, "column 2: string among integers"},
		{"ErrNullAmongBooleans", [][]any{
			{int64(0), "a", int64(1), true},
			{int64(1), "b", int64(2), sql.NullBool{}},
		}, "column 3: sql.NullBool among booleans"},
		{"ErrNullInt64AmongStrings", [][]any{
			{int64(0), sql.NullString{}, int64(1), true},
			{int64(1), sql.NullInt64{}, int64(2), false},
		}, "column 1: sql.NullInt64 among strings"},
		{"ErrUnknownType", [][]any{
			{int64(0), "a", 1.5, true},
			{int64(1), "b", 2.5, false},
		}, "column 2: float64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx := table(t)
			err := sqlstore.InsertArrays(ctx, tx, insert, tc.rows)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got error %v, want one with %q", err, tc.wantErr)
			}
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM arr`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d rows written", n)
			}
		})
	}
}
