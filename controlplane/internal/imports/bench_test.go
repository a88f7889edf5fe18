package imports_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shortlink.dev/controlplane/internal/imports/importstest"
	"shortlink.dev/controlplane/internal/imports/sources"
	"shortlink.dev/shared/importjob"
	"shortlink.dev/shared/sqlstore"
)

// BenchmarkImportJob imports a file of 20,000 rows (slug, destination,
// title, two tags, a created date, a click total) with the worker's
// default pause between batches, and reports links/s. PostgreSQL runs
// when SHORTLINK_TEST_POSTGRES_URL is set.
func BenchmarkImportJob(b *testing.B) {
	const rows = 20000
	created := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	lines := make([]string, rows)
	for i := range lines {
		lines[i] = importstest.Row(sources.Row{Slug: fmt.Sprintf("bench-%d", i), DestinationURL: fmt.Sprintf("https://example.com/p/%d?ref=flyer", i),
			Title: fmt.Sprintf("Page %d", i), Tags: []string{"print", "2020"}, CreatedAt: &created, Clicks: int64(i % 100)})
	}
	file := strings.Join(lines, "\n")
	run := func(b *testing.B, open func(t *testing.T) *sqlstore.Store) {
		for range b.N {
			t := &testing.T{}
			st := open(t)
			r := newRig(t, st, map[string]string{"SHORTLINK_PLAN_LINK_LIMITS": "free=100000,pro=100000,business=100000,scale=100000"})
			r.svc.Pause = r.cfg.ImportPause
			j := r.create(t, "", file)
			start := time.Now()
			done := r.runAll(t, j)
			el := time.Since(start)
			if done.Status != importjob.Done || done.Created != rows {
				b.Fatalf("job %+v", done)
			}
			b.ReportMetric(float64(rows)/el.Seconds(), "links/s")
		}
	}
	b.Run("SQLite", func(b *testing.B) {
		run(b, func(t *testing.T) *sqlstore.Store {
			st, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "t.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			return st
		})
	})
	b.Run("PostgreSQL", func(b *testing.B) {
		base := os.Getenv("SHORTLINK_TEST_POSTGRES_URL")
		if base == "" {
			b.Skip("SHORTLINK_TEST_POSTGRES_URL is not set")
		}
		run(b, func(t *testing.T) *sqlstore.Store { return openPostgresTB(b, base) })
	})
}
