package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// TestAnPerfBenchSmall runs the benchmark on SQLite with a few clicks: it
// loads, times every query, finds every human click in the 90-day answer,
// and gets the same answers after the rollup migrations' fills.
func TestAnPerfBenchSmall(t *testing.T) {
	o := options{clicks: 3000, links: 40, tags: 4, domains: 3, days: 5, countries: 10, stores: "sqlite",
		iters: 3, budget: time.Second, dir: t.TempDir(), backfill: true}
	out := captureStdout(t, func() {
		if err := run(o); err != nil {
			t.Fatal(err)
		}
	})
	for _, want := range []string{"### SQLite", "Ingest: 3 000 clicks", "| 90 days, groupBy=tag, tag=tag02 ",
		"Answers after it: 0 of 58 queries differ from before."} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Again on the same clicks, without loading them.
	o.reuse = true
	out = captureStdout(t, func() {
		if err := run(o); err != nil {
			t.Fatal(err)
		}
	})
	if !strings.Contains(out, "The clicks an earlier run loaded into") || !strings.Contains(out, "| 30 days, groupBy=country, –") {
		t.Errorf("-reuse output:\n%s", out)
	}
}

func TestAnPerfCountFlag(t *testing.T) {
	for in, want := range map[string]int{"10M": 10_000_000, "500k": 500_000, "2000": 2000} {
		var n int
		if err := (countFlag{&n}).Set(in); err != nil || n != want {
			t.Errorf("%s: %d, %v; want %d", in, n, err, want)
		}
	}
	var n int
	if err := (countFlag{&n}).Set("lots"); err == nil {
		t.Error("lots: no error")
	}
}

func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { os.Stdout = stdout }()
	fn()
	w.Close()
	os.Stdout = stdout
	return <-done
}
