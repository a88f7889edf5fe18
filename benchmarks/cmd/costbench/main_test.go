package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestScaleS11FlagsDefaultsAndChecks(t *testing.T) {
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.clicks != 1000000 || o.links != 2000 || o.assume.Peak != 10 || o.assume.Replicas != 2 || o.edgeCPU != "0" || o.wrkCPU != "1" {
		t.Errorf("defaults: %+v", o)
	}
	for _, bad := range [][]string{
		{"-clicks", "10"}, {"-links", "1"}, {"-peak", "0.5"}, {"-util", "0"}, {"-util", "1.5"},
		{"-miss-rate", "2"}, {"-miss-cache-bytes", "100"}, {"-edge-cpu", "x"}, {"-change-conns", "0"}, {"extra"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}

func TestScaleS11SizingArithmetic(t *testing.T) {
	u := unitCosts{
		EdgePerClick: 20 * time.Microsecond, EdgePerMiss: 50 * time.Microsecond,
		BrokerPerClick: time.Microsecond, ConsumerPerClick: 3 * time.Microsecond, ClickHousePerClick: 10 * time.Microsecond,
		PGPerClick: 500 * time.Nanosecond, PGPerMiss: 40 * time.Microsecond, PGPerChange: 2 * time.Millisecond, CPPerChange: 5 * time.Millisecond,
		RawBytesPerClick: 60, RollupBytesPerClick: 40,
	}
	a := assumptions{Peak: 10, Util: 0.5, MachineCores: 8, RetentionMonths: 12, Replicas: 2, MissRate: 0.1, ChangesPerMillion: 100, Regions: 3}
	s := size(u, a, 2592e6) // 1,000 clicks/s on average over 30 days
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("avg", s.Avg, 1000)
	near("peak", s.PeakRate, 10000)
	near("misses", s.Misses, 1000)
	near("changes", s.Changes, 1)
	// 10,000/s × 20 µs = 0.2 cores, 1,000 misses/s × 50 µs = 0.05, ÷ 0.5.
	near("edge", s.Edge, 0.5)
	near("consumer", s.Consumer, 0.06)
	near("clickhouse", s.ClickHouse, 0.4) // 10,000 × 10 µs ÷ 0.5 × 2 copies
	// (10,000 × 0.5 µs + 1,000 × 40 µs + 1 × 2 ms) ÷ 0.5 = (0.005 + 0.04 + 0.002) ÷ 0.5.
	near("pg", s.PG, 0.094)
	near("control plane", s.ControlPlane, 0.01)
	near("GB a month", s.GBPerMonth, 259.2)
	near("GB kept", s.GBRetained, 259.2*12*2)
	if s.EdgeMachines != 1 || s.EdgesPerRegion != 2 || s.ClickHouseMachines != 2 {
		t.Errorf("machines: edge %d (%d a region), ClickHouse %d", s.EdgeMachines, s.EdgesPerRegion, s.ClickHouseMachines)
	}
	big := size(u, a, 2592e8) // 100,000/s on average: 1M/s at the peak
	near("edge at 100x", big.Edge, 50)
	if big.EdgeMachines != 7 || big.EdgesPerRegion != 3 {
		t.Errorf("edge machines at 100x: %d (%d a region), want 7 (3)", big.EdgeMachines, big.EdgesPerRegion)
	}
}

func TestScaleS11Limits(t *testing.T) {
	u := unitCosts{EdgePerClick: 20 * time.Microsecond, ClickHousePerClick: 10 * time.Microsecond, ConsumerPerClick: 3 * time.Microsecond,
		PGPerClick: time.Microsecond, BrokerPerClick: time.Microsecond, CPPerChange: time.Millisecond}
	a := assumptions{Peak: 10, Util: 0.5, MachineCores: 8, RetentionMonths: 1, Replicas: 1, Regions: 1, ChangesPerMillion: 100}
	ls := limits(u, a)
	if ls[0].Component != "edge" {
		t.Errorf("first limit %q, want the edge", ls[0].Component)
	}
	// 8 cores × 0.5 ÷ (10 × 20 µs) = 20,000 clicks/s of average, × 2,592,000 s.
	if got, want := ls[0].Clicks, 20000.0*secondsPerMonth; math.Abs(got-want) > 1 {
		t.Errorf("edge limit %v, want %v", got, want)
	}
	for i := 1; i < len(ls); i++ {
		if ls[i].Clicks < ls[i-1].Clicks {
			t.Errorf("limits not in order: %v before %v", ls[i-1], ls[i])
		}
	}
	if !math.IsInf(clicksOnOneMachine(0, a), 1) {
		t.Error("a component that costs nothing has no limit")
	}
}

func TestScaleS11Texts(t *testing.T) {
	for n, want := range map[float64]string{1e8: "100M", 1e9: "1B", 1e10: "10B", 2.5e9: "2.5B", 1500: "1.5k", 12: "12", math.Inf(1): "∞"} {
		if got := clicksText(n); got != want {
			t.Errorf("clicksText(%v) = %q, want %q", n, got, want)
		}
	}
	out := sizingTables(unitCosts{EdgePerClick: 20 * time.Microsecond, RawBytesPerClick: 50}, assumptions{Peak: 10, Util: 0.6, MachineCores: 8,
		RetentionMonths: 13, Replicas: 2, Regions: 3}, volumes)
	for _, want := range []string{"| 100M ", "| 10B ", "× 13 months × 2 copies", "3 858 / 38 580", "2 a region × 3 regions = 6"} {
		if !strings.Contains(out, want) {
			t.Errorf("sizing tables lack %q:\n%s", want, out)
		}
	}
}

func TestScaleS11ClickHouseParts(t *testing.T) {
	q, sizes := partsQuery(map[string]bool{"bytes": true})
	if sizes || !strings.Contains(q, "sum(bytes)") || strings.Contains(q, "data_compressed_bytes") {
		t.Errorf("18.16 without the sizes: %v %s", sizes, q)
	}
	q, sizes = partsQuery(map[string]bool{"bytes_on_disk": true, "bytes": true, "data_compressed_bytes": true, "data_uncompressed_bytes": true})
	if !sizes || !strings.Contains(q, "sum(bytes_on_disk)") || !strings.Contains(q, "sum(data_uncompressed_bytes)") {
		t.Errorf("a current server: %v %s", sizes, q)
	}
	raw, rollups := diskTotals([]chTable{
		{Name: "clicks", Rows: 100, OnDisk: 5000, Compressed: 4000, Uncompressed: 20000},
		{Name: "click_ids", Rows: 100, OnDisk: 2000, Compressed: 1800, Uncompressed: 2400},
		{Name: "link_days", Rows: 2, OnDisk: 700, Compressed: 600, Uncompressed: 900},
		{Name: "link_day_keys", Rows: 30, OnDisk: 300, Compressed: 250, Uncompressed: 1200},
	})
	if raw.OnDisk != 7000 || raw.Compressed != 5800 || raw.Rows != 200 || rollups.OnDisk != 1000 || rollups.Uncompressed != 2100 {
		t.Errorf("totals: raw %+v rollups %+v", raw, rollups)
	}
	if got := perClick(raw.OnDisk, 100); got != 70 {
		t.Errorf("raw per click %v", got)
	}
	if perClick(1, 0) != 0 {
		t.Error("per click of no clicks")
	}
	for url, want := range map[string]string{
		"clickhouse://127.0.0.1:9000/shortlink":      "shortlink",
		"clickhouse://a:1,b:2/other?dial_timeout=1s": "other",
		"clickhouse://127.0.0.1:9000":                "shortlink",
	} {
		if got := chDatabase(url); got != want {
			t.Errorf("chDatabase(%q) = %q, want %q", url, got, want)
		}
	}
}

func TestScaleS11PostgresParts(t *testing.T) {
	admin, db, err := adminURL("postgres://postgres@127.0.0.1:5432/shortlink_ab12?sslmode=disable")
	if err != nil || db != "shortlink_ab12" || admin != "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable" {
		t.Errorf("adminURL: %q %q %v", admin, db, err)
	}
	if _, _, err := adminURL("postgres://127.0.0.1:5432"); err == nil {
		t.Error("a URL without a database accepted")
	}
	c := pgCounters{Xacts: 10, Inserted: 5, Updated: 7, Deleted: 1, Returned: 100, ActiveMS: 3}.sub(pgCounters{Xacts: 4, Inserted: 1, Updated: 2, ActiveMS: 1})
	if c.Xacts != 6 || c.Written() != 10 || c.Returned != 100 || c.ActiveMS != 2 {
		t.Errorf("sub: %+v", c)
	}
	b := newBackendCPU()
	b.see(1, 5*time.Second, false)       // there before the phase: counts from 5 s
	b.see(2, 300*time.Millisecond, true) // started during it: counts from 0
	b.see(1, 7*time.Second, false)
	b.see(2, 200*time.Millisecond, true) // never backwards
	if got := b.total(); got != 2300*time.Millisecond || b.count() != 2 {
		t.Errorf("backends: %v of %d", got, b.count())
	}
}

func TestScaleS11PipelineArithmetic(t *testing.T) {
	p := pipeline{clicks: 1000000, chMerged: 12 * time.Second, chIdle: 20 * time.Millisecond, toMerge: 50 * time.Second}
	// (12 s − 20 ms/s × 50 s) ÷ 1M = 11 µs.
	if got := p.chPerClick(); got != 11*time.Microsecond {
		t.Errorf("ClickHouse per click %v", got)
	}
	p.chIdle = time.Second
	if got := p.chPerClick(); got != 0 {
		t.Errorf("idle above busy gives %v, want 0", got)
	}
	if per(time.Second, 0) != 0 || per(time.Second, 4) != 250*time.Millisecond {
		t.Error("per")
	}
}
