package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"shortlink.dev/analytics/clickhouse/chserver"
)

// TestCHPerfBenchReuseClickHouse: -reuse on ClickHouse times the clicks
// the earlier run loaded (it dropped them with its database before), and
// -answers writes every answer, the same in both runs.
func TestCHPerfBenchReuseClickHouse(t *testing.T) {
	if _, err := chserver.Find(); err != nil {
		t.Skipf("no clickhouse-server: %v", err)
	}
	dir := t.TempDir()
	o := options{clicks: 2000, links: 20, tags: 4, domains: 3, days: 5, countries: 10, stores: "clickhouse",
		iters: 3, budget: time.Second, dir: dir, answers: filepath.Join(dir, "first.json")}
	captureStdout(t, func() {
		if err := run(o); err != nil {
			t.Fatal(err)
		}
	})
	o.reuse, o.answers = true, filepath.Join(dir, "again.json")
	captureStdout(t, func() {
		if err := run(o); err != nil {
			t.Fatal(err)
		}
	})
	read := func(name string) map[string]string {
		js, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var a map[string]map[string]string
		if err := json.Unmarshal(js, &a); err != nil {
			t.Fatal(err)
		}
		return a["ClickHouse"]
	}
	first, again := read("first.json"), read("again.json")
	if len(first) != 58 || len(again) != 58 {
		t.Fatalf("answers: %d then %d, want 58 each", len(first), len(again))
	}
	for q, got := range first {
		if again[q] != got {
			t.Errorf("%s: %s after loading, %s with -reuse", q, clip(got), clip(again[q]))
		}
	}
}
