// Command anbench times workspace analytics (GET /api/v1/analytics, issue
// 21 point 1: under 50 ms at 10M clicks) on both click stores. For each
// store it opens the control plane's store and the click store as the
// binaries do (sqlstore.Open, then analytics/backend.Open), creates one
// workspace with -links links (each with one or two of -tags tags, on one of
// -domains domains), writes -clicks clicks over the last -days days through
// the store's own WriteClicks in the bus's batches (in time order, spread
// evenly over the links; -countries countries, their cities, devices,
// browsers, systems, a long tail of referrers, returning and new visitors,
// 3 % bots), then times every query below as the control plane answers GET
// /analytics: the workspace's link facets (LinkFacets), the links the
// filters keep, the click store's Analytics, and tag and domain rows
// gathered from link rows. Each query runs -iters times (fewer past
// -budget, at least 3) and reports p50 and p99. Last it times the first
// Open after the rollup migrations (SQLite: the fill of click_dims_pending
// and click_links_pending; ClickHouse: fillDims), on the same clicks put
// back into the state those migrations find.
//
// With -http (the default; http.go), between the two, its stores closed, it
// starts the real binary on the same data (SQLite: `shortlink serve`;
// ClickHouse: `controlplane serve`, from -bin) and times every query again
// as GET /api/v1/analytics with an API key of the workspace, beside a bare
// fasthttp 302 (bin/bare302) timed in the same run, and checks that every
// HTTP answer is the store-level one.
//
// ClickHouse: -clickhouse URL (a clickhouse:// URL of the native port; a new
// database is created and dropped), else a clickhouse-server started in a
// temporary folder when one is installed, else the ClickHouse run is
// skipped with a line saying so.
//
// Usage (from the repository root; `make bench-analytics`):
//
//	go run ./benchmarks/cmd/anbench [-clicks 10000000] [-stores sqlite,clickhouse] [-clickhouse URL] [-bin bin] [-http=false]
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"shortlink.dev/analytics/backend"
	"shortlink.dev/analytics/clickhouse/chserver"
	"shortlink.dev/benchmarks/internal/clickload"
	"shortlink.dev/benchmarks/internal/report"
	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/id"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/stats"
	"shortlink.dev/shared/workspace"
)

type options struct {
	clicks, links, tags, domains, days, countries int
	stores                                        string
	clickhouse                                    string
	iters                                         int
	budget                                        time.Duration
	dir                                           string
	backfill                                      bool
	batch                                         int
	reuse                                         bool
	only                                          string
	cpuprofile                                    string
	answers                                       string
	// The HTTP phase (http.go): the binaries' folder, its copy for the run,
	// and each store's HTTP answers (for -answers).
	http        bool
	bin, binDir string
	httpAnswers map[string]map[string]string
}

func main() {
	var o options
	fs := flag.NewFlagSet("anbench", flag.ExitOnError)
	fs.Var(countFlag{&o.clicks}, "clicks", "clicks to load into each store (like 10M, 1M, 200000)")
	o.clicks = 10_000_000
	fs.IntVar(&o.links, "links", 1000, "links of the workspace")
	fs.IntVar(&o.tags, "tags", 20, "tags; each link has one, every fourth a second")
	fs.IntVar(&o.domains, "domains", 3, "domains the links are spread over")
	fs.IntVar(&o.days, "days", 60, "days the clicks span, ending today (UTC)")
	fs.IntVar(&o.countries, "countries", 50, "countries the clicks come from (at most 50)")
	fs.StringVar(&o.stores, "stores", "sqlite,clickhouse", "click stores to run, comma-separated")
	fs.StringVar(&o.clickhouse, "clickhouse", "", "clickhouse:// URL of a running server (default: start one when installed)")
	fs.IntVar(&o.iters, "iters", 20, "times each query is timed")
	fs.DurationVar(&o.budget, "budget", 3*time.Second, "time a query is timed for, at most (at least 3 runs)")
	fs.StringVar(&o.dir, "dir", "", "folder for the SQLite file and the ClickHouse server (default: a temporary one, removed)")
	fs.BoolVar(&o.backfill, "backfill", true, "time the first Open after the rollup migrations")
	fs.StringVar(&o.only, "only", "", "time only the queries whose name contains this")
	fs.StringVar(&o.answers, "answers", "", "write every store's answers (totals and rows of each query) to this JSON file, to compare runs")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the timed queries to this file")
	fs.BoolVar(&o.reuse, "reuse", false, "time the queries on the clicks an earlier run loaded into -dir (no load, no backfill)")
	fs.BoolVar(&o.http, "http", true, "also time every query through the real binary over HTTP (http.go), beside bin/bare302")
	fs.StringVar(&o.bin, "bin", "bin", "folder of the built binaries for -http: shortlink, controlplane, bare302 (make build)")
	fs.IntVar(&o.batch, "batch", 0, "clicks per WriteClicks (default: the batch of the bus that feeds the store; larger loads faster)")
	fs.Parse(os.Args[1:])
	if o.countries < 1 || o.countries > len(countryCodes) || o.links < 1 || o.tags < 1 || o.domains < 1 || o.days < 1 || o.clicks < 1 {
		fmt.Fprintf(os.Stderr, "anbench: -clicks, -links, -tags, -domains, -days must be positive, -countries 1–%d\n", len(countryCodes))
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "anbench:", err)
		os.Exit(1)
	}
}

// countFlag reads 10M, 500k or 200000.
type countFlag struct{ n *int }

func (c countFlag) String() string {
	if c.n == nil {
		return ""
	}
	return strconv.Itoa(*c.n)
}

func (c countFlag) Set(s string) error {
	mult := 1
	switch {
	case strings.HasSuffix(s, "M"):
		mult, s = 1_000_000, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "k"):
		mult, s = 1_000, strings.TrimSuffix(s, "k")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return fmt.Errorf("not a count: %q", s)
	}
	*c.n = n * mult
	return nil
}

func run(o options) error {
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "anbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if o.http {
		var err error
		if o.binDir, err = copyBinaries(o, filepath.Join(dir, "bin")); err != nil {
			return err
		}
		o.httpAnswers = map[string]map[string]string{}
	}
	m := report.ReadMachine()
	fmt.Println("## Workspace analytics at", report.Int(int64(o.clicks)), "clicks")
	fmt.Println()
	fmt.Println(m.Markdown())
	fmt.Printf("Command: `go run ./benchmarks/cmd/anbench %s`\n\n", strings.Join(os.Args[1:], " "))
	fmt.Printf("One workspace, %d links (tags: each link one of %d, every fourth a second; %d domains), %s clicks over the last %d days "+
		"(UTC) in time order, each on a link drawn uniformly, from %d countries (with their cities), 3 devices, 9 browsers, 8 systems, "+
		"35 %% direct and a tail of 5 000 referrer hosts, 7 clicks in 10 from a pool of returning visitors, 3 %% bots; written through "+
		"the store's WriteClicks (opened as the binaries open it) in batches (the bus that feeds it hands over: SQLite, the in-process bus, %d; "+
		"ClickHouse, the consumer, %d; -batch overrides both). Each query is what GET /api/v1/analytics does: LinkFacets, the links the filters keep, "+
		"the click store's Analytics, tag and domain rows gathered from link rows; timed %d times (fewer past %s, at least 3). "+
		"CPU/query is this process's CPU time (every thread) over the timed runs, divided by their number: what a query costs "+
		"whatever else the machine runs (ClickHouse's own work is not in it).\n\n",
		o.links, o.tags, o.domains, report.Int(int64(o.clicks)), o.days, o.countries, bus.DefaultBatchSize, consumerBatch,
		o.iters, o.budget)
	answers := map[string]map[string]string{}
	for _, name := range strings.Split(o.stores, ",") {
		var err error
		switch strings.TrimSpace(name) {
		case "sqlite":
			answers["SQLite"], err = runSQLite(o, filepath.Join(dir, "sqlite"))
		case "clickhouse":
			answers["ClickHouse"], err = runClickHouse(o, filepath.Join(dir, "clickhouse"))
		default:
			err = fmt.Errorf("unknown store %q (sqlite, clickhouse)", name)
		}
		if err != nil {
			return err
		}
	}
	if o.answers != "" {
		for name, a := range o.httpAnswers {
			answers[name+" over HTTP"] = a
		}
		js, err := json.MarshalIndent(answers, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.answers, js, 0o644); err != nil {
			return err
		}
	}
	if a, b := answers["SQLite"], answers["ClickHouse"]; a != nil && b != nil {
		differ := 0
		for q, got := range a {
			if b[q] != got {
				differ++
				if differ <= 3 {
					fmt.Printf("- %s: SQLite %s, ClickHouse %s\n", q, clip(got), clip(b[q]))
				}
			}
		}
		fmt.Printf("Answers of the two stores (totals and every row): %d of %d queries differ.\n\n", differ, len(a))
	}
	return nil
}

// consumerBatch is the Kafka consumer's batch (cmd/analytics), ClickHouse's writer.
const consumerBatch = 5000

// target is issue 21's bound for GET /analytics.
const target = 50 * time.Millisecond

// storeRun is one store's run: its stores and how to put its rollups back
// into the state the rollup migrations find.
type storeRun struct {
	name  string
	open  func(ctx context.Context) (*sqlstore.Store, backend.Store, error)
	batch int
	// unfill puts the stored clicks back into the state the rollup
	// migrations find (nil: not timed).
	unfill func(ctx context.Context) error
	// serve is how the real binary serves the data (the HTTP phase).
	serve httpShape
}

func runSQLite(o options, dir string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	settings := map[string]string{"SHORTLINK_DATA_DIR": dir}
	r := storeRun{name: "SQLite", batch: cmp.Or(o.batch, bus.DefaultBatchSize),
		open: func(ctx context.Context) (*sqlstore.Store, backend.Store, error) { return openStores(ctx, settings) },
		unfill: func(ctx context.Context) error {
			return sqliteUnfill(ctx, filepath.Join(dir, "shortlink.db"))
		},
		serve: httpShape{bin: "shortlink", settings: settings},
	}
	return r.run(o)
}

func runClickHouse(o options, dir string) (map[string]string, error) {
	ctx := context.Background()
	url, pid := o.clickhouse, 0
	if url == "" {
		bin, err := chserver.Find()
		if err != nil {
			fmt.Printf("### ClickHouse\n\nSkipped: %v\n\n", err)
			return nil, nil
		}
		s, err := chserver.Start(ctx, chserver.Config{Dir: dir, Binary: bin})
		if err != nil {
			fmt.Printf("### ClickHouse\n\nSkipped: cannot start clickhouse-server: %v\n\n", err)
			return nil, nil
		}
		defer s.Stop()
		url, pid = s.URL(""), s.Pid()
	}
	base, err := ch.ParseDSN(url)
	if err != nil {
		return nil, fmt.Errorf("-clickhouse %q: %w", url, err)
	}
	base.Auth.Database = ""
	conn, err := ch.Open(base)
	if err == nil {
		err = conn.Ping(ctx)
	}
	if err != nil {
		fmt.Printf("### ClickHouse\n\nSkipped: ClickHouse at %s does not answer: %v\n\n", url, err)
		return nil, nil
	}
	defer conn.Close()
	db := "anbench_" + strings.ToLower(rand.Text()[:10])
	if o.dir != "" {
		// Kept in -dir for -reuse: a fixed name, emptied by a run that loads.
		db = "anbench"
		if !o.reuse {
			if err := conn.Exec(ctx, "DROP DATABASE IF EXISTS `"+db+"`"); err != nil {
				return nil, err
			}
		}
	} else {
		defer conn.Exec(context.Background(), "DROP DATABASE IF EXISTS `"+db+"`")
	}
	chURL := "clickhouse://" + base.Addr[0] + "/" + db
	sqlDir := filepath.Join(dir, "controlplane")
	if err := os.MkdirAll(sqlDir, 0o755); err != nil {
		return nil, err
	}
	settings := map[string]string{"SHORTLINK_DATA_DIR": sqlDir, "SHORTLINK_CLICKHOUSE_URL": chURL}
	r := storeRun{name: "ClickHouse", batch: cmp.Or(o.batch, consumerBatch),
		open: func(ctx context.Context) (*sqlstore.Store, backend.Store, error) { return openStores(ctx, settings) },
		unfill: func(ctx context.Context) error {
			return clickhouseUnfill(ctx, conn, db)
		},
		serve: httpShape{bin: "controlplane", settings: settings, broker: true, enginePID: pid},
	}
	return r.run(o)
}

// openStores opens the stores as the composition roots do.
func openStores(ctx context.Context, settings map[string]string) (*sqlstore.Store, backend.Store, error) {
	cfg, err := config.Load(func(k string) string { return settings[k] })
	if err != nil {
		return nil, nil, err
	}
	st, err := sqlstore.Open(ctx, cfg.DatabaseURL, cfg.DataDir)
	if err != nil {
		return nil, nil, err
	}
	store, err := backend.Open(ctx, cfg, st)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, store, nil
}

// fixture is the workspace loaded.
type fixture struct {
	ws      *workspace.Workspace
	links   []*link.Link
	tags    []string
	domains []string
}

func (r storeRun) run(o options) (map[string]string, error) {
	ctx := context.Background()
	fmt.Printf("### %s\n\n", r.name)
	st, store, err := r.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: open: %w", r.name, err)
	}
	var f *fixture
	humans := int64(-1)
	if o.reuse {
		f, err = loadedFixture(ctx, st)
		fmt.Printf("The clicks an earlier run loaded into %s.\n\n", o.dir)
	} else if f, err = newFixture(ctx, st, o); err == nil {
		var loaded time.Duration
		if loaded, humans, err = load(ctx, store, f, o, r.batch); err != nil {
			err = fmt.Errorf("load: %w", err)
		} else {
			fmt.Printf("Ingest: %s clicks (%s human) in %s: **%s clicks/s** (WriteClicks, batches of %d).\n\n",
				report.Int(int64(o.clicks)), report.Int(humans), loaded.Round(time.Millisecond),
				report.Int(int64(float64(o.clicks)/loaded.Seconds())), r.batch)
		}
	}
	if err != nil {
		store.Close()
		st.Close()
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	inner := store
	if w, ok := store.(interface{ Unwrap() backend.Store }); ok {
		inner = w.Unwrap()
	}
	if sealer, ok := inner.(interface {
		Seal(ctx context.Context, ws string, from, to time.Time) error
	}); ok && err == nil {
		// What the store does in the background once a day is over (a
		// query of the workspace asks it to), and for today every minute
		// or so while it is read: the days of the clicks sealed before the
		// queries are timed.
		began := time.Now()
		now := time.Now().UTC()
		if err = sealer.Seal(ctx, f.ws.ID, now.AddDate(0, 0, -o.days-1), now); err != nil {
			err = fmt.Errorf("seal: %w", err)
		} else {
			fmt.Printf("Sealing the workspace's days (the finished ones whole, today link by link; the store does it in the background "+
				"once a day is over, and today's every minute or so while it is read): **%s**.\n\n", time.Since(began).Round(time.Millisecond))
		}
	}
	if err != nil {
		store.Close()
		st.Close()
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	answers, err := timeQueries(ctx, st, store, f, o, humans)
	store.Close()
	st.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	if o.http {
		// The same queries through the real binary, on the same data (http.go).
		if o.httpAnswers[r.name], err = r.timeHTTP(o, f, answers); err != nil {
			return nil, fmt.Errorf("%s: HTTP: %w", r.name, err)
		}
	}
	if o.backfill && r.unfill != nil && !o.reuse {
		if err := r.timeBackfill(ctx, o, f, answers); err != nil {
			return nil, fmt.Errorf("%s: backfill: %w", r.name, err)
		}
	}
	return answers, nil
}

// timeBackfill puts the rollups back into the state the migrations find,
// times the first Open, and checks that the answers are the same.
func (r storeRun) timeBackfill(ctx context.Context, o options, f *fixture, before map[string]string) error {
	began := time.Now()
	if err := r.unfill(ctx); err != nil {
		return err
	}
	undone := time.Since(began)
	began = time.Now()
	st, store, err := r.open(ctx)
	if err != nil {
		return err
	}
	opened := time.Since(began)
	defer st.Close()
	defer store.Close()
	differ, n := 0, 0
	for _, q := range queries(f, o) {
		got, err := answer(ctx, st, store, f, q)
		if err != nil {
			return err
		}
		n++
		if got != before[q.name] {
			differ++
			if differ <= 3 {
				fmt.Printf("- %s after the fill: %s, before: %s\n", q.name, clip(got), clip(before[q.name]))
			}
		}
	}
	fmt.Printf("First Open after the rollup migrations (%s), on these clicks: **%s** (putting them back took %s). "+
		"Answers after it: %d of %d queries differ from before.\n\n",
		r.backfillWhat(), opened.Round(time.Millisecond), undone.Round(time.Millisecond), differ, n)
	return nil
}

func (r storeRun) backfillWhat() string {
	if r.name == "SQLite" {
		return "0004's fillDims: cities and systems counted from the chunks of every link-day, and click_workspace_rollup filled; " +
			"0005's fill of click_workspace_links from every workspace-day's link rows"
	}
	return "0004's fillDims: cities and systems of every stored click counted into click_backfill"
}

// newFixture creates the workspace and its links in the control plane's store.
func newFixture(ctx context.Context, st *sqlstore.Store, o options) (*fixture, error) {
	now := time.Now().UTC()
	f := &fixture{ws: &workspace.Workspace{ID: fixtureWorkspace, Name: "anbench", Plan: workspace.Enterprise, CreatedAt: now}}
	if err := st.CreateWorkspace(ctx, f.ws); err != nil {
		return nil, fmt.Errorf("create workspace: %w", err)
	}
	for i := range o.tags {
		f.tags = append(f.tags, fmt.Sprintf("tag%02d", i))
	}
	for i := range o.domains {
		f.domains = append(f.domains, fmt.Sprintf("d%d.sho.rt", i))
	}
	for i := range o.links {
		tags := []string{f.tags[i%o.tags]}
		if i%4 == 0 && o.tags > 1 {
			if t := f.tags[(i/4+1)%o.tags]; t != tags[0] {
				tags = append(tags, t)
			}
		}
		// The same ids in every store, so that their answers compare.
		l := &link.Link{ID: fmt.Sprintf("%sanbench%012d", id.Link, i), WorkspaceID: f.ws.ID, Domain: f.domains[i%o.domains],
			Slug: fmt.Sprintf("l%d", i), DestinationURL: fmt.Sprintf("https://example.com/%d", i),
			Tags: tags, CreatedAt: now, UpdatedAt: now}
		if err := st.CreateLink(ctx, l, -1); err != nil {
			return nil, fmt.Errorf("create link %d: %w", i, err)
		}
		f.links = append(f.links, l)
	}
	return f, nil
}

// loadedFixture finds the workspace an earlier run created.
func loadedFixture(ctx context.Context, st *sqlstore.Store) (*fixture, error) {
	facets, err := st.LinkFacets(ctx, fixtureWorkspace)
	if err != nil {
		return nil, err
	}
	if len(facets) == 0 {
		return nil, fmt.Errorf("-reuse: no links of workspace %s in -dir", fixtureWorkspace)
	}
	f := &fixture{ws: &workspace.Workspace{ID: fixtureWorkspace}}
	tags, domains := map[string]bool{}, map[string]bool{}
	for _, fc := range facets {
		f.links = append(f.links, &link.Link{ID: fc.ID, Domain: fc.Domain, Tags: fc.Tags})
		for _, t := range fc.Tags {
			tags[t] = true
		}
		domains[fc.Domain] = true
	}
	for t := range tags {
		f.tags = append(f.tags, t)
	}
	for d := range domains {
		f.domains = append(f.domains, d)
	}
	slices.Sort(f.tags)
	slices.Sort(f.domains)
	return f, nil
}

// fixtureWorkspace is the id of the workspace loaded.
const fixtureWorkspace = "ws_anbench"

// load writes o.clicks clicks through store and returns how long it took
// and how many were human.
func load(ctx context.Context, store backend.Store, f *fixture, o options, batchSize int) (time.Duration, int64, error) {
	end := time.Now().UTC()
	start := end.Truncate(24*time.Hour).AddDate(0, 0, -(o.days - 1))
	span := end.Sub(start)
	rng := mrand.New(mrand.NewPCG(21, 1))
	tail := mrand.NewZipf(rng, 1.1, 1, 4999)
	returning := uint64(max(o.clicks/100, 1000))
	var fresh uint64
	batch := make([]click.Event, 0, batchSize)
	var humans int64
	began := time.Now()
	lastReport := began
	for i := range o.clicks {
		t := start.Add(time.Duration((float64(i) + rng.Float64()) * float64(span) / float64(o.clicks)))
		l := f.links[rng.IntN(len(f.links))]
		c := countryCodes[min(int(rng.ExpFloat64()*float64(o.countries)/4), o.countries-1)]
		dev, agent := click.DeviceDesktop, desktopAgents[rng.IntN(len(desktopAgents))]
		if n := rng.IntN(100); n < 43 {
			dev, agent = click.DeviceMobile, mobileAgents[rng.IntN(len(mobileAgents))]
		} else if n < 48 {
			dev, agent = click.DeviceTablet, [2]string{"Safari", "iPadOS"}
		}
		ref := ""
		switch n := rng.IntN(100); {
		case n < 35:
		case n < 90:
			ref = referrers[rng.IntN(len(referrers))]
		default:
			ref = fmt.Sprintf("site%d.example", tail.Uint64())
		}
		var who uint64
		if rng.IntN(10) < 7 {
			who = rng.Uint64N(returning)
		} else {
			fresh++
			who = returning + fresh
		}
		v := clickload.DailyVisitor(who, t)
		bot := rng.IntN(100) < 3
		if !bot {
			humans++
		}
		batch = append(batch, click.Event{
			V: click.Version, ID: click.NewEventID(), Time: t, LinkID: l.ID, WorkspaceID: f.ws.ID,
			Domain: l.Domain, Slug: l.Slug, Target: l.DestinationURL, Country: c, City: cityOf(c, rng),
			Device: dev, Browser: agent[0], OS: agent[1], Referrer: ref, Trigger: click.TriggerLink,
			Bot: bot, Visitor: v,
		})
		if len(batch) == batchSize || i == o.clicks-1 {
			if err := store.WriteClicks(ctx, batch); err != nil {
				return 0, 0, err
			}
			batch = batch[:0]
			if time.Since(lastReport) > 30*time.Second {
				lastReport = time.Now()
				fmt.Fprintf(os.Stderr, "anbench: %d clicks written, %.0f/s\n", i+1, float64(i+1)/time.Since(began).Seconds())
			}
		}
	}
	return time.Since(began), humans, nil
}

// query is one GET /analytics.
type query struct {
	name    string
	groupBy string
	days    int
	// the link filters and the one click filter (country)
	linkID, tag, domain, country string
}

// queries are the requests timed: every groupBy without a filter, the
// common groupings with each link filter, and a country filter; over 30
// and 90 days.
func queries(f *fixture, o options) []query {
	var qs []query
	for _, days := range []int{30, 90} {
		for _, g := range []string{"country", "city", "device", "browser", "os", "referrer", "link", "tag", "domain", "day"} {
			qs = append(qs, query{groupBy: g, days: days})
		}
		for _, g := range []string{"country", "referrer", "link", "tag", "day"} {
			qs = append(qs,
				query{groupBy: g, days: days, tag: f.tags[len(f.tags)/2]},
				query{groupBy: g, days: days, linkID: f.links[len(f.links)/2].ID},
				query{groupBy: g, days: days, domain: f.domains[len(f.domains)-1]})
		}
		for _, g := range []string{"country", "link", "tag", "day"} {
			qs = append(qs, query{groupBy: g, days: days, country: "DE"})
		}
	}
	for i := range qs {
		q := &qs[i]
		var filters []string
		if q.tag != "" {
			filters = append(filters, "tag="+q.tag)
		}
		if q.linkID != "" {
			filters = append(filters, "linkId=1 link")
		}
		if q.domain != "" {
			filters = append(filters, "domain="+q.domain)
		}
		if q.country != "" {
			filters = append(filters, "country="+q.country)
		}
		if len(filters) == 0 {
			filters = append(filters, "–")
		}
		q.name = fmt.Sprintf("%d days, groupBy=%s, %s", q.days, q.groupBy, strings.Join(filters, " "))
	}
	return qs
}

// answer runs q as the control plane's linkstats.Workspace does, and
// returns the answer as text (totals and every row).
func answer(ctx context.Context, st *sqlstore.Store, store backend.Store, f *fixture, q query) (string, error) {
	a, err := analytics(ctx, st, store, f, q)
	if err != nil {
		return "", err
	}
	return answerText(a), nil
}

// answerText is an answer as text: totals and every row.
func answerText(a *stats.Analytics) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d", a.TotalClicks, a.UniqueClicks)
	for _, r := range a.Rows {
		fmt.Fprintf(&b, " %s:%d/%d", r.Key, r.Clicks, r.UniqueClicks)
	}
	return b.String()
}

// analytics is linkstats.Service.Workspace's work (controlplane/internal,
// which this module cannot import): the facets, the links the filters
// keep, the store's answer, tag and domain rows gathered from link rows.
func analytics(ctx context.Context, st *sqlstore.Store, store backend.Store, f *fixture, q query) (*stats.Analytics, error) {
	to := time.Now().UTC().Truncate(24 * time.Hour)
	rng := stats.Range{From: to.AddDate(0, 0, -(q.days - 1)), To: to}
	facets, err := st.LinkFacets(ctx, f.ws.ID)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*link.Facets, len(facets))
	ids := make([]string, 0, len(facets))
	for i := range facets {
		fc := &facets[i]
		if (q.linkID != "" && fc.ID != q.linkID) || (q.tag != "" && !slices.Contains(fc.Tags, q.tag)) ||
			(q.domain != "" && !strings.EqualFold(fc.Domain, q.domain)) {
			continue
		}
		byID[fc.ID] = fc
		ids = append(ids, fc.ID)
	}
	sq := stats.AnalyticsQuery{LinkIDs: ids, Range: rng, GroupBy: q.groupBy,
		Whole: q.linkID == "" && q.tag == "" && q.domain == "", WorkspaceID: f.ws.ID}
	if q.country != "" {
		sq.Filter = &stats.KeyFilter{Dim: stats.DimCountry, Key: q.country}
	}
	if q.groupBy == "tag" || q.groupBy == "domain" {
		sq.GroupBy = stats.GroupLink
	}
	a, err := store.Analytics(ctx, sq)
	if err != nil {
		return nil, err
	}
	if q.groupBy == "tag" || q.groupBy == "domain" {
		sums := map[string]*stats.AnalyticsRow{}
		for _, r := range a.Rows {
			fc := byID[r.Key]
			if fc == nil {
				continue
			}
			keys := fc.Tags
			if q.groupBy == "domain" {
				keys = []string{fc.Domain}
			}
			for _, k := range keys {
				s := sums[k]
				if s == nil {
					s = &stats.AnalyticsRow{Key: k}
					sums[k] = s
				}
				s.Clicks += r.Clicks
				s.UniqueClicks += r.UniqueClicks
			}
		}
		a.Rows = a.Rows[:0]
		for _, s := range sums {
			a.Rows = append(a.Rows, *s)
		}
		stats.SortRows(a.Rows)
	}
	return a, nil
}

// timeQueries times every query and prints the table; it returns each
// query's answer.
func timeQueries(ctx context.Context, st *sqlstore.Store, store backend.Store, f *fixture, o options, humans int64) (map[string]string, error) {
	t := report.NewTable("query (GET /analytics)", "links asked", "first", "timed", "p50", "p99", "CPU/query", "totalClicks", "rows", "< 50 ms (p99)")
	cold := dropsCache(store)
	answers := map[string]string{}
	var met, missed int
	if o.cpuprofile != "" {
		pf, err := os.Create(o.cpuprofile)
		if err != nil {
			return nil, err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	for _, q := range queries(f, o) {
		if !strings.Contains(q.name, o.only) {
			continue
		}
		if cold {
			dropCache(store)
		}
		first := time.Now()
		got, err := answer(ctx, st, store, f, q) // once untimed: caches, pages
		firstTook := time.Since(first)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q.name, err)
		}
		answers[q.name] = got
		var times []time.Duration
		cpu0 := cpuTime()
		began := time.Now()
		var a *stats.Analytics
		for len(times) < o.iters && (len(times) < 3 || time.Since(began) < o.budget) {
			t0 := time.Now()
			if a, err = analytics(ctx, st, store, f, q); err != nil {
				return nil, fmt.Errorf("%s: %w", q.name, err)
			}
			times = append(times, time.Since(t0))
		}
		cpu := (cpuTime() - cpu0) / time.Duration(len(times))
		if last := answerText(a); last != got {
			// A store that keeps answers (SQLite's kept sums of closed
			// days) gave the last, warm, run another answer than the first.
			return nil, fmt.Errorf("%s: the last timed answer differs from the first:\n%s\n%s", q.name, clip(last), clip(got))
		}
		slices.Sort(times)
		p50, p99 := report.Percentile(times, 0.50), report.Percentile(times, 0.99)
		verdict := "meets"
		if p99 >= target {
			verdict, missed = "**misses**", missed+1
		} else {
			met++
		}
		t.Add(q.name, linksAsked(f, q), report.Dur(firstTook), len(times), report.Dur(p50), report.Dur(p99), report.Dur(cpu), report.Int(a.TotalClicks),
			len(a.Rows), verdict)
		if q.days == 90 && q.groupBy == "day" && q.linkID == "" && q.tag == "" && q.domain == "" && q.country == "" &&
			humans >= 0 && a.TotalClicks != humans {
			return nil, fmt.Errorf("%s: totalClicks %d, want the %d human clicks loaded", q.name, a.TotalClicks, humans)
		}
	}
	t.Print(os.Stdout)
	if cold {
		fmt.Printf("\n\"first\" is each query's first run, untimed in p50 and p99, with the store's kept sums of closed days " +
			"dropped before it (SQLite: the cold answer, as the first after the store opens); the timed runs that follow are warm.\n")
	} else {
		fmt.Printf("\n\"first\" is each query's first run, untimed in p50 and p99.\n")
	}
	fmt.Printf("\n%d queries meet < 50 ms at p99, %d miss.\n\n", met, missed)
	return answers, nil
}

// dropsCache reports whether the store keeps answers of closed days that
// dropCache can drop (SQLite's kept sums, analytics/sqlite/ancache.go;
// ClickHouse's sums of sealed days, analytics/clickhouse/sealedsums.go).
func dropsCache(store backend.Store) bool {
	_, ok := unwrapStore(store).(interface{ DropAnalyticsCache() })
	return ok
}

// dropCache drops the store's kept answers of closed days, when it keeps some.
func dropCache(store backend.Store) {
	if d, ok := unwrapStore(store).(interface{ DropAnalyticsCache() }); ok {
		d.DropAnalyticsCache()
	}
}

// unwrapStore is the click store under the event-emitting wrapper.
func unwrapStore(store backend.Store) backend.Store {
	if w, ok := store.(interface{ Unwrap() backend.Store }); ok {
		return w.Unwrap()
	}
	return store
}

// linksAsked is how many links the query names to the click store ("whole":
// the workspace, which a store may answer from its workspace rollups).
func linksAsked(f *fixture, q query) string {
	switch {
	case q.linkID != "":
		return "1"
	case q.tag != "":
		n := 0
		for _, l := range f.links {
			if slices.Contains(l.Tags, q.tag) {
				n++
			}
		}
		return strconv.Itoa(n)
	case q.domain != "":
		n := 0
		for _, l := range f.links {
			if l.Domain == q.domain {
				n++
			}
		}
		return strconv.Itoa(n)
	}
	return "whole"
}

// sqliteUnfill puts an SQLite file's rollups back into the state
// migrations 0004 and 0005 find: click_workspace_rollup and
// click_workspace_links empty, every link-day and workspace-day pending.
func sqliteUnfill(ctx context.Context, path string) error {
	st, err := sqlstore.OpenSQLite(ctx, path)
	if err != nil {
		return err
	}
	defer st.Close()
	db, err := sqlstore.OpenSQLiteDB(ctx, path)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, stmt := range []string{
		`DELETE FROM click_workspace_rollup`,
		`INSERT OR IGNORE INTO click_dims_pending (link_id, day) SELECT DISTINCT link_id, day FROM click_chunks WHERE humans > 0`,
		`DELETE FROM click_workspace_links`,
		`INSERT OR IGNORE INTO click_links_pending (workspace_id, day)
			SELECT DISTINCT workspace_id, day FROM click_chunks WHERE humans > 0`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// clickhouseUnfill puts a ClickHouse database back into the state
// migration 0004 finds: every click with dims = 0, no city or os counted.
func clickhouseUnfill(ctx context.Context, conn ch.Conn, db string) error {
	for _, stmt := range []string{
		"ALTER TABLE `" + db + "`.clicks UPDATE dims = 0 WHERE dims = 1",
		"ALTER TABLE `" + db + "`.link_day_keys DELETE WHERE dim IN ('city', 'os')",
		"TRUNCATE TABLE `" + db + "`.click_dims_runs",
	} {
		if err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	// Mutations run in the background: wait for them.
	deadline := time.Now().Add(30 * time.Minute)
	for {
		var n uint64
		if err := conn.QueryRow(ctx, `SELECT count() FROM system.mutations WHERE database = ? AND is_done = 0`, db).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("ClickHouse mutations still running after 30 minutes")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// cpuTime is the CPU time this process has used (user and system, every
// thread: the garbage collector's too).
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// clip shortens an answer to print.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func cityOf(country string, rng *mrand.Rand) string {
	if rng.IntN(10) == 0 {
		return "" // unknown
	}
	return fmt.Sprintf("%s city %d", country, rng.IntN(4))
}

var (
	// countryCodes in order of frequency (drawn exponentially).
	countryCodes = []string{"US", "IN", "GB", "DE", "BR", "FR", "CA", "JP", "ES", "IT", "NL", "AU", "MX", "PL", "SE", "KR", "ID",
		"TR", "NG", "AR", "ZA", "CH", "BE", "AT", "IE", "PT", "NO", "DK", "FI", "SG", "PH", "VN", "EG", "CO", "CL", "NZ", "IL",
		"UA", "CZ", "GR", "RO", "HU", "TH", "MY", "PK", "BD", "KE", "MA", "PE", ""}
	desktopAgents = [][2]string{{"Chrome", "Windows"}, {"Edge", "Windows"}, {"Firefox", "Windows"}, {"Safari", "macOS"},
		{"Chrome", "macOS"}, {"Firefox", "Linux"}, {"Opera", "Windows"}, {"Chrome", "ChromeOS"}}
	mobileAgents = [][2]string{{"Safari", "iOS"}, {"Chrome", "Android"}, {"Samsung Internet", "Android"}, {"Chrome", "iOS"},
		{"Instagram", "iOS"}}
	referrers = []string{"google.com", "google.com", "google.com", "t.co", "t.co", "facebook.com", "linkedin.com", "reddit.com",
		"news.ycombinator.com", "instagram.com", "youtube.com", "bing.com", "duckduckgo.com"}
)
