package clickhouse

import (
	"strings"
	"testing"

	"shortlink.dev/shared/migration"
)

// TestCHClusterStatements: every statement of the migrations has a cluster
// form, a table's rows are sharded by link when it has one (so that a
// link's rollups stay on its shard), and the views read and write the
// local tables.
func TestCHClusterStatements(t *testing.T) {
	files, err := migration.Load(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, m := range files {
		for _, stmt := range m.Statements {
			out, err := clusterStatements(stmt, "db", "c")
			if err != nil {
				t.Fatalf("%s: %v", m.Name, err)
			}
			all = append(all, out...)
		}
	}
	want := []struct{ stmt, has string }{
		{"clicks_local", "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/db/clicks', '{replica}')"},
		{"IF NOT EXISTS clicks AS", "ENGINE = Distributed(c, db, clicks_local, cityHash64(link_id))"},
		{"link_days_local", "ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/db/link_days', '{replica}')"},
		{"link_days_local", "SETTINGS index_granularity = 16"},
		{"click_backfill_local", "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/db/click_backfill', '{replica}', clicks)"},
		{"IF NOT EXISTS click_backfill AS", "cityHash64(id)"},
		{"IF NOT EXISTS workspace_seals AS", "cityHash64(workspace_id)"},
		{"workspace_seals_local", "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/db/workspace_seals', '{replica}', gen)"},
		{"IF NOT EXISTS workspace_day_keys AS", "cityHash64(link_id)"},
		{"IF NOT EXISTS click_dims_runs AS", "rand()"},
		{"link_days_feed TO link_days_local AS", "FROM clicks_local"},
		{"ALTER TABLE clicks_local ADD COLUMN rolled", "DEFAULT 0"},
		{"ALTER TABLE clicks ADD COLUMN rolled", "DEFAULT 0"},
		{"link_days_feed2 TO link_days_local AS", "FROM clicks_in_local WHERE bot = 0 AND rolled = 2"},
		{"clicks_in_local", "ENGINE = Null()"},
		{"IF NOT EXISTS clicks_in AS", "ENGINE = Distributed(c, db, clicks_in_local, cityHash64(link_id))"},
		{"zz_click_ids_feed TO click_ids_local AS", "FROM clicks_in_local"},
		{"ALTER TABLE link_day_keys_local ADD COLUMN events", "DEFAULT 0"},
		{"DROP TABLE IF EXISTS click_ids_feed", ""},
	}
	for _, w := range want {
		found := false
		for _, s := range all {
			if strings.Contains(s, w.stmt) && strings.Contains(s, w.has) {
				found = true
			}
		}
		if !found {
			t.Errorf("no statement with %q and %q", w.stmt, w.has)
		}
	}
	for _, s := range all {
		if strings.Contains(s, "MATERIALIZED VIEW") && strings.Contains(s, "FROM clicks\n") {
			t.Errorf("a view reads the Distributed table:\n%s", s)
		}
	}
	if _, err := clusterStatements("DROP TABLE IF EXISTS clicks", "db", "c"); err == nil {
		t.Errorf("a DROP of a table, not a view, was taken")
	}
	if _, err := clusterStatements("CREATE TABLE IF NOT EXISTS x (a UInt8) ENGINE = Log", "db", "c"); err == nil {
		t.Errorf("an engine with no replicated form was taken")
	}
}
