package main

import (
	"fmt"
	"time"

	"shortlink.dev/benchmarks/internal/report"
)

// volumes are the clicks a month the sizing is derived for.
var volumes = []float64{1e8, 1e9, 1e10}

// chPerClick is clickhouse-server's CPU per click until the merges were
// done, less its idle background work over that time.
func (p pipeline) chPerClick() time.Duration {
	busy := p.chMerged - time.Duration(float64(p.chIdle)*p.toMerge.Seconds())
	return per(max(busy, 0), p.clicks)
}

// costs are the unit costs the sizing reads, from the results.
func (r *results) costs() unitCosts {
	raw, rollups := diskTotals(r.tables)
	return unitCosts{
		EdgePerClick:        max(r.clicks.perRedirect(), r.get.perRedirect()), // the dearer of full load and the paced rate
		EdgePerMiss:         per(r.miss.cpu, r.miss.misses),
		BrokerPerClick:      per(r.clicks.broker+r.get.broker+r.pipe.broker, r.pipe.clicks),
		ConsumerPerClick:    per(r.pipe.consumer, r.pipe.clicks),
		ClickHousePerClick:  r.pipe.chPerClick(),
		PGPerClick:          per(r.pipe.pg.CPU, r.pipe.clicks),
		PGPerMiss:           per(r.miss.pg.CPU, r.miss.misses),
		PGPerChange:         per(r.changes.pg.CPU, int64(r.changes.n)),
		CPPerChange:         per(r.changes.cp, int64(r.changes.n)),
		RawBytesPerClick:    perClick(raw.OnDisk, r.pipe.clicks),
		RollupBytesPerClick: perClick(rollups.OnDisk, r.pipe.clicks),
	}
}

// ratio is a/b with two decimals, or "—".
func ratio(a, b int64) string {
	if b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

func bytesText(b float64) string { return fmt.Sprintf("%.1f B", b) }

func (b *bench) report(command string, m report.Machine, loadStart string, r *results) {
	o := b.o
	u := r.costs()
	b.printf("## The cost of a click (costbench)\n\n")
	b.printf("Command: `%s`. ClickHouse %s; PostgreSQL: a fresh database of the machine's server; the broker: kfake (deploy/local/services).\n\n%s\n", command, r.chVersion, m.Markdown())
	b.printf("Load average at the start of the run: %s.\n\n", loadStart)

	b.printf("### Measured\n\nCPU is utime+stime (/proc/PID/stat) of each process, all threads, from the start of a phase until the process went idle after it; "+
		"PostgreSQL's is that of the run database's backends (pg_stat_activity's pids, polled every 200 ms), its counters pg_stat_database's of that database "+
		"(read %s after the phase: a backend reports them within 10 s of going idle). "+
		"The requests: a random link of %d, User-Agents of 11 desktop, mobile and tablet browsers and a bot, Referers of 12 hosts and a tail of 5,000 (a quarter none), "+
		"a random IPv4 client address in X-Forwarded-For (`benchmarks/internal/wrk`'s mix.lua for wrk, the same mix in Go for the paced runs, `benchmarks/internal/paced`, %d connections, in this process, not pinned); "+
		"`wrk -t1 -c%d` pinned to CPU %q, the edges to %q; the rest not pinned. A HEAD is answered like a GET but makes no click.\n\n",
		report.Dur(o.statsWait), o.links, o.conns, o.conns, o.wrkCPU, o.edgeCPU)
	t := report.NewTable("measure", "value", "from")
	t.Add(fmt.Sprintf("edge CPU per redirect, HEAD at %s/s (cache hit, no click)", report.Int(int64(o.pacedRate))), report.Dur(r.head.perRedirect()),
		fmt.Sprintf("%s ÷ %s redirects (%s req/s, p99 %s)", report.Dur(r.head.cpu), report.Int(r.head.redirects), report.Int(int64(r.head.rps)), report.Dur(r.head.p99)))
	t.Add(fmt.Sprintf("edge CPU per redirect, GET at %s/s (cache hit, click produced)", report.Int(int64(o.pacedRate))), report.Dur(r.get.perRedirect()),
		fmt.Sprintf("%s ÷ %s redirects (%s req/s, p99 %s)", report.Dur(r.get.cpu), report.Int(r.get.redirects), report.Int(int64(r.get.rps)), report.Dur(r.get.p99)))
	t.Add("of which the click (event, visitor hash, producer): GET − HEAD", "**"+report.Dur(r.get.perRedirect()-r.head.perRedirect())+"**",
		fmt.Sprintf("%s − %s", report.Dur(r.get.perRedirect()), report.Dur(r.head.perRedirect())))
	t.Add("edge CPU per redirect, GET under wrk (full load, click produced)", "**"+report.Dur(r.clicks.perRedirect())+"**",
		fmt.Sprintf("%s ÷ %s redirects (%s req/s, p99 %s; %d dropped)", report.Dur(r.clicks.cpu), report.Int(r.clicks.redirects), report.Int(int64(r.clicks.rps)), report.Dur(r.clicks.p99), r.clicks.dropped+r.get.dropped))
	t.Add("broker (kfake) CPU per click, produced", report.Dur(per(r.clicks.broker+r.get.broker, r.clicks.redirects+r.get.redirects)),
		fmt.Sprintf("%s ÷ %s", report.Dur(r.clicks.broker+r.get.broker), report.Int(r.clicks.redirects+r.get.redirects)))
	t.Add("broker (kfake) CPU per click, consumed", report.Dur(per(r.pipe.broker, r.pipe.clicks)), fmt.Sprintf("%s ÷ %s", report.Dur(r.pipe.broker), report.Int(r.pipe.clicks)))
	t.Add("analytics consumer CPU per click", "**"+report.Dur(u.ConsumerPerClick)+"**",
		fmt.Sprintf("%s ÷ %s clicks, all in ClickHouse %s after the consumer started (%s clicks/s)", report.Dur(r.pipe.consumer), report.Int(r.pipe.clicks),
			report.Dur(r.pipe.toCount), report.Int(int64(report.Ratio(float64(r.pipe.clicks), r.pipe.toCount.Seconds())))))
	t.Add("clickhouse-server CPU per click, until all counted", report.Dur(per(r.pipe.chCounted, r.pipe.clicks)), fmt.Sprintf("%s ÷ %s", report.Dur(r.pipe.chCounted), report.Int(r.pipe.clicks)))
	merged := "merges done"
	if !r.pipe.merged {
		merged = "**merges still running** at -merge-timeout"
	}
	t.Add("clickhouse-server CPU per click, until its merges were done", "**"+report.Dur(u.ClickHousePerClick)+"**",
		fmt.Sprintf("(%s − idle %s/s × %s) ÷ %s (%s %s after the consumer started)", report.Dur(r.pipe.chMerged), report.Dur(r.pipe.chIdle), report.Dur(r.pipe.toMerge), report.Int(r.pipe.clicks), merged, report.Dur(r.pipe.toMerge)))
	t.Add("PostgreSQL per click (the consumer's counters): backend CPU", report.Dur(u.PGPerClick), fmt.Sprintf("%s ÷ %s", report.Dur(r.pipe.pg.CPU), report.Int(r.pipe.clicks)))
	t.Add("PostgreSQL per 1,000 clicks: transactions / rows written", fmt.Sprintf("%.2f / %.2f", 1000*perClick(uint64(max(r.pipe.pg.Xacts, 0)), r.pipe.clicks), 1000*perClick(uint64(max(r.pipe.pg.Written(), 0)), r.pipe.clicks)),
		fmt.Sprintf("%s transactions, %s rows (%s updated) for %s clicks", report.Int(r.pipe.pg.Xacts), report.Int(r.pipe.pg.Written()), report.Int(r.pipe.pg.Updated), report.Int(r.pipe.clicks)))
	raw, rollups := diskTotals(r.tables)
	t.Add("ClickHouse bytes per click on disk, raw tables (clicks, workspace_clicks, click_ids)", "**"+bytesText(u.RawBytesPerClick)+"**",
		fmt.Sprintf("%s B ÷ %s; compressed columns %s, uncompressed %s", report.Int(int64(raw.OnDisk)), report.Int(r.pipe.clicks),
			bytesText(perClick(raw.Compressed, r.pipe.clicks)), bytesText(perClick(raw.Uncompressed, r.pipe.clicks))))
	t.Add("ClickHouse bytes per click on disk, rollups", "**"+bytesText(u.RollupBytesPerClick)+"**",
		fmt.Sprintf("%s B ÷ %s; compressed columns %s, uncompressed %s; %s link-days (%s clicks a link-day)", report.Int(int64(rollups.OnDisk)), report.Int(r.pipe.clicks),
			bytesText(perClick(rollups.Compressed, r.pipe.clicks)), bytesText(perClick(rollups.Uncompressed, r.pipe.clicks)),
			report.Int(int64(r.linkDays)), ratio(r.pipe.clicks, int64(r.linkDays))))
	t.Add("the day's workspace analytics seal (asked by GET /analytics, written by the control plane)", report.Dur(r.seal.took),
		fmt.Sprintf("from the query until the seal counted all %s human clicks; its tables (workspace_shares, workspace_link_shares, workspace_share_sums, workspace_day_seals) are among the rollups",
			report.Int(r.seal.clicks)))
	for _, x := range []struct {
		what string
		a    apiRun
	}{{"link created (POST /links)", r.create}, {"link changed (PATCH /links/{id})", r.changes}} {
		n := int64(x.a.n)
		t.Add("PostgreSQL per "+x.what+": backend CPU / transactions / rows written / rows read", fmt.Sprintf("%s / %s / %s / %s",
			report.Dur(per(x.a.pg.CPU, n)), ratio(x.a.pg.Xacts, n), ratio(x.a.pg.Written(), n), ratio(x.a.pg.Returned+x.a.pg.Fetched, n)),
			fmt.Sprintf("%d requests, %d at once, in %s (p50 %s, p99 %s); statement time %.2f ms each", x.a.n, x.a.conns,
				report.Dur(x.a.elapsed), report.Dur(x.a.p50), report.Dur(x.a.p99), x.a.pg.ActiveMS/float64(max(n, 1))))
		t.Add("control plane / edge CPU per "+x.what, fmt.Sprintf("%s / %s", report.Dur(per(x.a.cp, n)), report.Dur(per(x.a.edge, n))),
			fmt.Sprintf("%s, %s ÷ %d", report.Dur(x.a.cp), report.Dur(x.a.edge), x.a.n))
	}
	t.Add("cache misses: queries per miss (links a query)", fmt.Sprintf("%s (%s)", ratio(r.miss.lookups, r.miss.misses), ratio(r.miss.keys, r.miss.lookups)),
		fmt.Sprintf("%s store queries asking %s links for %s misses (%s hits) of %s HEAD requests, edge cache %d bytes", report.Int(r.miss.lookups), report.Int(r.miss.keys),
			report.Int(r.miss.misses), report.Int(r.miss.hits), report.Int(r.miss.redirects), r.missCacheBytes))
	t.Add("PostgreSQL per cache miss: backend CPU / rows read", fmt.Sprintf("%s / %s", report.Dur(u.PGPerMiss), ratio(r.miss.pg.Returned+r.miss.pg.Fetched, r.miss.misses)),
		fmt.Sprintf("%s ÷ %s misses; %s transactions", report.Dur(r.miss.pg.CPU), report.Int(r.miss.misses), report.Int(r.miss.pg.Xacts)))
	t.Add(fmt.Sprintf("edge CPU per cache miss (HEAD at %s/s)", report.Int(int64(o.missRate))), report.Dur(u.EdgePerMiss),
		fmt.Sprintf("%s ÷ %s misses (%s req/s, p99 %s)", report.Dur(r.miss.cpu), report.Int(r.miss.misses), report.Int(int64(r.miss.rps)), report.Dur(r.miss.p99)))
	b.printf("%s\n", t.Markdown())

	d := report.NewTable("table", "kind", "active parts", "rows", "bytes on disk", "per click on disk", "compressed columns per click", "uncompressed per click")
	for _, x := range append(r.tables, raw, rollups) {
		kind := "rollup"
		switch {
		case x.Name == raw.Name || x.Name == rollups.Name:
			kind = "**total**"
		case x.Raw():
			kind = "raw"
		}
		d.Add(x.Name, kind, report.Int(int64(x.Parts)), report.Int(int64(x.Rows)), report.Int(int64(x.OnDisk)), bytesText(perClick(x.OnDisk, r.pipe.clicks)),
			bytesText(perClick(x.Compressed, r.pipe.clicks)), bytesText(perClick(x.Uncompressed, r.pipe.clicks)))
	}
	b.printf("### ClickHouse on disk after %s clicks\n\nsystem.parts (active parts) of the run's database, after the merges; bytes on disk are the compressed columns, their marks, the primary index and the checksums.\n\n%s\n", report.Int(r.pipe.clicks), d.Markdown())
	cols := report.NewTable("column of clicks", "compressed per click", "uncompressed per click", "ratio")
	for _, c := range r.columns {
		cols.Add(c.Name, bytesText(perClick(c.Compressed, r.pipe.clicks)), bytesText(perClick(c.Uncompressed, r.pipe.clicks)), ratio(int64(c.Uncompressed), int64(c.Compressed)))
	}
	b.printf("%s\n", cols.Markdown())

	a := o.assume
	b.printf("### Derived: machines and storage for 100M, 1B and 10B clicks a month\n\n"+
		"Assumed: a month of 30 days; every redirect a click; peak = %.3g × the month's average; each component at most %.0f %% of its cores at the peak; machines of %d cores; "+
		"%.3g %% of redirects miss the edge's cache; %.3g link changes a million clicks; ClickHouse keeps %d months, %d copies of each shard; edges in %d regions, at least 2 a region. "+
		"ClickHouse's bytes a click are the run's (%s clicks on %d links in a day: rollups shrink per click as clicks a link-day grow). "+
		"The broker is kfake, not Kafka: its figure is this test broker's.\n\n%s\n",
		a.Peak, a.Util*100, a.MachineCores, a.MissRate*100, a.ChangesPerMillion, a.RetentionMonths, a.Replicas, a.Regions,
		report.Int(r.pipe.clicks), o.links, sizingTables(u, a, volumes))
	b.printf("Load average at the end: %s.\n", report.LoadAverage())
}
