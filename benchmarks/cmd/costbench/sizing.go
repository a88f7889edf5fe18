package main

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"shortlink.dev/benchmarks/internal/report"
)

// secondsPerMonth is a month of 30 days.
const secondsPerMonth = 30 * 86400

// assumptions are what the sizing takes as given, beside the measured costs.
type assumptions struct {
	// Peak is the peak rate ÷ the month's average rate.
	Peak float64
	// Util is the share of each core a component may use at the peak.
	Util float64
	// MachineCores are the cores of one machine.
	MachineCores int
	// RetentionMonths are the months of clicks ClickHouse keeps.
	RetentionMonths int
	// Replicas are the copies of every ClickHouse shard.
	Replicas int
	// MissRate is the share of redirects that miss the edge's cache.
	MissRate float64
	// ChangesPerMillion are link changes (creates and PATCHes) per million clicks.
	ChangesPerMillion float64
	// Regions are the regions the edges are spread over.
	Regions int
}

func (a assumptions) check() error {
	switch {
	case a.Peak < 1:
		return errors.New("-peak must be at least 1")
	case a.Util <= 0 || a.Util > 1:
		return errors.New("-util must be above 0 and at most 1")
	case a.MachineCores < 1 || a.RetentionMonths < 1 || a.Replicas < 1 || a.Regions < 1:
		return errors.New("-machine-cores, -retention, -replicas and -regions must be positive")
	case a.MissRate < 0 || a.MissRate > 1:
		return errors.New("-miss-rate must be between 0 and 1")
	case a.ChangesPerMillion < 0:
		return errors.New("-changes-per-million must not be negative")
	}
	return nil
}

// unitCosts are the measured figures the sizing reads: CPU time per unit of
// work of each process, and bytes on disk per click.
type unitCosts struct {
	EdgePerClick        time.Duration // edge, per redirect with its click produced
	EdgePerMiss         time.Duration // edge, per cache miss (HEAD: no click)
	BrokerPerClick      time.Duration // the broker (kfake), producing and consuming
	ConsumerPerClick    time.Duration // bin/analytics
	ClickHousePerClick  time.Duration // clickhouse-server, inserts and the merges after
	PGPerClick          time.Duration // PostgreSQL's backends: the consumer's counters
	PGPerMiss           time.Duration // PostgreSQL's backends, per cache miss
	PGPerChange         time.Duration // PostgreSQL's backends, per link change
	CPPerChange         time.Duration // bin/controlplane, per link change
	RawBytesPerClick    float64       // ClickHouse, compressed on disk: the tables with a row per click
	RollupBytesPerClick float64       // ClickHouse, compressed on disk: the rollups, at the run's shape
}

// sizing is a deployment for one volume of clicks a month.
type sizing struct {
	ClicksPerMonth float64
	Avg, PeakRate  float64 // clicks (redirects) per second
	Misses         float64 // cache misses per second at the peak
	Changes        float64 // link changes per second at the peak
	// Cores at the peak, by component, at Util of each core.
	Edge, Broker, Consumer, ClickHouse, PG, ControlPlane float64
	// Machines of MachineCores cores.
	EdgeMachines, EdgesPerRegion, ClickHouseMachines int
	// Storage in ClickHouse, compressed on disk, GB (10^9 bytes).
	GBPerMonth, GBRetained float64
}

// cores is the cores a rate of work costing per each needs at util.
func cores(rate float64, per time.Duration, util float64) float64 {
	return rate * per.Seconds() / util
}

// machines is how many machines of n cores hold c cores (at least one).
func machines(c float64, n int) int {
	return max(1, int(math.Ceil(c/float64(n)-1e-9)))
}

// size derives the deployment for clicksPerMonth from the unit costs.
func size(u unitCosts, a assumptions, clicksPerMonth float64) sizing {
	s := sizing{ClicksPerMonth: clicksPerMonth}
	s.Avg = clicksPerMonth / secondsPerMonth
	s.PeakRate = s.Avg * a.Peak
	s.Misses = s.PeakRate * a.MissRate
	s.Changes = s.PeakRate * a.ChangesPerMillion / 1e6
	s.Edge = cores(s.PeakRate, u.EdgePerClick, a.Util) + cores(s.Misses, u.EdgePerMiss, a.Util)
	s.Broker = cores(s.PeakRate, u.BrokerPerClick, a.Util)
	s.Consumer = cores(s.PeakRate, u.ConsumerPerClick, a.Util)
	s.ClickHouse = cores(s.PeakRate, u.ClickHousePerClick, a.Util) * float64(a.Replicas)
	s.PG = cores(s.PeakRate, u.PGPerClick, a.Util) + cores(s.Misses, u.PGPerMiss, a.Util) + cores(s.Changes, u.PGPerChange, a.Util)
	s.ControlPlane = cores(s.Changes, u.CPPerChange, a.Util)
	s.EdgeMachines = machines(s.Edge, a.MachineCores)
	// Two edges a region at least, so that one can fail.
	s.EdgesPerRegion = max(2, int(math.Ceil(float64(s.EdgeMachines)/float64(a.Regions)-1e-9)))
	s.ClickHouseMachines = max(machines(s.ClickHouse, a.MachineCores), a.Replicas)
	s.GBPerMonth = clicksPerMonth * (u.RawBytesPerClick + u.RollupBytesPerClick) / 1e9
	s.GBRetained = s.GBPerMonth * float64(a.RetentionMonths) * float64(a.Replicas)
	return s
}

// limit is how many clicks a month one machine of a component holds.
type limit struct {
	Component string
	PerClick  time.Duration // CPU per click, misses and changes included
	Clicks    float64       // clicks a month at which it needs a second machine
	Scales    string        // how it grows past one machine
}

// limits are the components' clicks a month on one machine, fewest first.
func limits(u unitCosts, a assumptions) []limit {
	pg := u.PGPerClick + time.Duration(a.MissRate*float64(u.PGPerMiss)) + time.Duration(a.ChangesPerMillion/1e6*float64(u.PGPerChange))
	ls := []limit{
		{"PostgreSQL, one server (counters, misses, changes)", pg, 0, "one primary takes every write (counters, changes); read replicas take the misses of their region"},
		{"ClickHouse server (inserts and merges)", u.ClickHousePerClick, 0, "shards (SHORTLINK_CLICKHOUSE_CLUSTER)"},
		{"analytics consumer", u.ConsumerPerClick, 0, "one consumer a partition, up to the clicks topic's partitions"},
		{"edge", u.EdgePerClick + time.Duration(a.MissRate*float64(u.EdgePerMiss)), 0, "more edges, in every region"},
		{"broker (kfake here, not Kafka)", u.BrokerPerClick, 0, "brokers and partitions"},
		{"control plane (link changes)", time.Duration(a.ChangesPerMillion / 1e6 * float64(u.CPPerChange)), 0, "more control planes (stateless) on the one primary"},
	}
	for i := range ls {
		ls[i].Clicks = clicksOnOneMachine(ls[i].PerClick, a)
	}
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].Clicks < ls[j].Clicks })
	return ls
}

// clicksOnOneMachine is the clicks a month whose peak takes one machine's
// cores at Util: cores × util ÷ (peak × per click) × seconds a month.
func clicksOnOneMachine(per time.Duration, a assumptions) float64 {
	if per <= 0 {
		return math.Inf(1)
	}
	return float64(a.MachineCores) * a.Util / (a.Peak * per.Seconds()) * secondsPerMonth
}

// clicksText is a count of clicks a month in words: "100M", "1B", "10B".
func clicksText(n float64) string {
	switch {
	case math.IsInf(n, 1):
		return "∞"
	case n >= 1e9:
		return trimZero(fmt.Sprintf("%.1f", n/1e9)) + "B"
	case n >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", n/1e6)) + "M"
	case n >= 1e3:
		return trimZero(fmt.Sprintf("%.1f", n/1e3)) + "k"
	}
	return fmt.Sprintf("%.0f", n)
}

func trimZero(s string) string {
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}

// coresText is "12.3 (= 38 580/s × 25.1 µs ÷ 0.6)": the figure and its arithmetic.
func coresText(c, rate float64, per time.Duration, util float64) string {
	return fmt.Sprintf("%.2f (= %s/s × %s ÷ %.2g)", c, report.Int(int64(math.Round(rate))), report.Dur(per), util)
}

// sizingTables are the derived tables: cores and machines, storage, and the
// limits, each cell with its arithmetic.
func sizingTables(u unitCosts, a assumptions, volumes []float64) string {
	t := report.NewTable("clicks a month", "average / peak clicks/s", "edge cores", "edge machines", "broker cores", "consumer cores",
		"ClickHouse cores (× replicas)", "ClickHouse machines", "PostgreSQL cores", "control plane cores", "ClickHouse GB a month", "GB kept")
	for _, v := range volumes {
		s := size(u, a, v)
		t.Add(clicksText(v),
			fmt.Sprintf("%s / %s (= %s ÷ %d s × %.3g)", report.Int(int64(math.Round(s.Avg))), report.Int(int64(math.Round(s.PeakRate))), clicksText(v), secondsPerMonth, a.Peak),
			fmt.Sprintf("%.2f (= %s/s × %s + %s misses/s × %s, ÷ %.2g)", s.Edge, report.Int(int64(math.Round(s.PeakRate))), report.Dur(u.EdgePerClick),
				report.Int(int64(math.Round(s.Misses))), report.Dur(u.EdgePerMiss), a.Util),
			fmt.Sprintf("%d of %d cores by CPU; %d a region × %d regions = %d", s.EdgeMachines, a.MachineCores, s.EdgesPerRegion, a.Regions, s.EdgesPerRegion*a.Regions),
			coresText(s.Broker, s.PeakRate, u.BrokerPerClick, a.Util),
			coresText(s.Consumer, s.PeakRate, u.ConsumerPerClick, a.Util),
			fmt.Sprintf("%.2f (= %s/s × %s ÷ %.2g × %d)", s.ClickHouse, report.Int(int64(math.Round(s.PeakRate))), report.Dur(u.ClickHousePerClick), a.Util, a.Replicas),
			fmt.Sprintf("%d of %d cores (by CPU, at least the %d copies; disk: the GB kept)", s.ClickHouseMachines, a.MachineCores, a.Replicas),
			fmt.Sprintf("%.2f (= (%s/s × %s + %s misses/s × %s + %.3g changes/s × %s) ÷ %.2g)", s.PG,
				report.Int(int64(math.Round(s.PeakRate))), report.Dur(u.PGPerClick), report.Int(int64(math.Round(s.Misses))), report.Dur(u.PGPerMiss),
				s.Changes, report.Dur(u.PGPerChange), a.Util),
			fmt.Sprintf("%.3f (= %.3g changes/s × %s ÷ %.2g)", s.ControlPlane, s.Changes, report.Dur(u.CPPerChange), a.Util),
			fmt.Sprintf("%.1f (= %s × %.1f B)", s.GBPerMonth, clicksText(v), u.RawBytesPerClick+u.RollupBytesPerClick),
			fmt.Sprintf("%.0f (= %.1f × %d months × %d copies)", s.GBRetained, s.GBPerMonth, a.RetentionMonths, a.Replicas))
	}
	l := report.NewTable("component", "CPU per click (misses and changes included)", "clicks a month on one machine", "past one machine")
	for _, x := range limits(u, a) {
		l.Add(x.Component, report.Dur(x.PerClick),
			fmt.Sprintf("%s (= %d cores × %.2g ÷ (%.3g × %s) × %d s)", clicksText(x.Clicks), a.MachineCores, a.Util, a.Peak, report.Dur(x.PerClick), secondsPerMonth),
			x.Scales)
	}
	return t.Markdown() + "\n" + l.Markdown()
}
