// Command pwbench measures what a burst of wrong passwords costs an edge
// (issue 18, point 1): it starts the real standalone binary (`bin/shortlink
// serve`, fresh data folder, 127.0.0.1 only), creates a password-protected
// link through the API, fires -tries wrong passwords at it (at once, unless
// a row says otherwise), and
// prints a markdown table per scenario:
//
//   - one client: every try from 127.0.0.1 (the lockout: at most 10 checked);
//   - many clients: every try with its own X-Forwarded-For address, the
//     server trusting 127.0.0.1 as a proxy (the per-link ceiling: at most
//     100 checked, and the memory gate bounding those that run at once);
//   - many clients, one at a time: the same tries one after another, so
//     that the gate sheds none and the per-link ceiling stops them: 100
//     checks one after another, the memory of a sustained guess;
//   - all three again with the server on PostgreSQL (a fresh database on the
//     machine's server, -postgres; click analytics then need ClickHouse,
//     -clickhouse, a fresh database too), where the edge counts tries in the
//     password_tries table as the split edges do. Skipped unless both are
//     set.
//
// Columns: the answers (401 wrong password, 429 locked out or busy), the
// argon2id checks the edge ran (shortlink_edge_password_checks_total on its
// /metrics) and those it shed (…_shed_total), and the server's resident
// memory (/proc/PID/status): VmRSS before the burst, VmHWM (its peak, reset
// before the burst through /proc/PID/clear_refs), and
// VmRSS 1 s and 10 s after the last answer. Each scenario runs on a fresh
// server.
//
// Usage (from the repository root, after `make build`):
//
//	go run ./benchmarks/cmd/pwbench [-bin bin] [-tries 1000] [-postgres URL -clickhouse URL]
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"shortlink.dev/benchmarks/internal/api"
	"shortlink.dev/benchmarks/internal/proc"
	"shortlink.dev/benchmarks/internal/report"
)

var (
	apiLine  = regexp.MustCompile(`(?m)^\s*API:\s+(http://\S+/api/v1)\s*$`)
	edgeLine = regexp.MustCompile(`(?m)^\s*Edge:\s+(http://\S+/)\s*$`)
)

// The goals of issue 18: memory growth and argon2 checks of a burst.
const (
	goalGrowth          = 100 << 20
	triesPerClient      = 10
	triesPerLinkCeiling = 100
)

func main() {
	bin := flag.String("bin", "bin", "folder of the built binaries (make build)")
	tries := flag.Int("tries", 1000, "wrong passwords sent at once")
	pgURL := os.Getenv("SHORTLINK_LOCAL_POSTGRES_URL")
	if pgURL == "" {
		pgURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	pg := flag.String("postgres", pgURL, "PostgreSQL server where a fresh database is made for the PostgreSQL rows (\"\": skip them)")
	ch := flag.String("clickhouse", os.Getenv("SHORTLINK_TEST_CLICKHOUSE_URL"), "ClickHouse server (clickhouse://host:port/) for the PostgreSQL rows (\"\": skip them)")
	flag.Parse()
	if *ch == "" {
		*pg = ""
	}
	if err := run(*bin, *tries, engines{*pg, *ch}); err != nil {
		fmt.Fprintln(os.Stderr, "pwbench:", err)
		os.Exit(1)
	}
}

// result is one scenario's figures.
type result struct {
	name                string
	status              map[int]int
	checks, shed        int64
	before, peak        int64
	after1s, after10s   int64
	maxChecks           int64
	elapsed             time.Duration
	transportErrs, sent int
}

// engines are the servers of the PostgreSQL rows; empty: skip them.
type engines struct{ postgres, clickhouse string }

func run(bin string, tries int, eng engines) error {
	m := report.ReadMachine()
	var results []result
	for _, sc := range []struct {
		name      string
		many, pg  bool
		paced     int
		maxChecks int64
	}{
		{"one client", false, false, 0, triesPerClient},
		{"many clients", true, false, 0, triesPerLinkCeiling},
		{"many clients, one at a time", true, false, 1, triesPerLinkCeiling},
		{"one client, PostgreSQL", false, true, 0, triesPerClient},
		{"many clients, PostgreSQL", true, true, 0, triesPerLinkCeiling},
		{"many clients, one at a time, PostgreSQL", true, true, 1, triesPerLinkCeiling},
	} {
		if sc.pg && eng.postgres == "" {
			fmt.Fprintf(os.Stderr, "pwbench: %s skipped: -postgres and -clickhouse are not both set\n", sc.name)
			continue
		}
		fmt.Fprintf(os.Stderr, "pwbench: %s, %d wrong passwords\n", sc.name, tries)
		r, err := scenario(bin, tries, sc.many, sc.pg, sc.paced, eng)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		r.name, r.maxChecks = sc.name, sc.maxChecks
		results = append(results, r)
	}

	fmt.Printf("## Password bursts: %s wrong passwords at once against `shortlink serve`\n\n", report.Int(int64(tries)))
	fmt.Println(m.Markdown())
	fmt.Printf("Each row: a fresh `bin/shortlink serve` (SQLite, or a fresh PostgreSQL database), one link with a password, "+
		"%s POSTs of wrong passwords sent at once on as many connections, from 127.0.0.1 (one client) or each with its own "+
		"X-Forwarded-For (many clients; 127.0.0.1 trusted as a proxy). RSS is the server's VmRSS (/proc/PID/status), its peak VmHWM.\n\n", report.Int(int64(tries)))
	t := report.NewTable("clients", "401", "429", "other", "argon2 checks", "shed (busy)", "RSS before", "RSS peak (VmHWM)", "growth", "RSS +1 s", "RSS +10 s", "burst took")
	for _, r := range results {
		other := r.transportErrs
		for s, n := range r.status {
			if s != http.StatusUnauthorized && s != http.StatusTooManyRequests {
				other += n
			}
		}
		t.Add(r.name, r.status[http.StatusUnauthorized], r.status[http.StatusTooManyRequests], other, r.checks, r.shed,
			report.Bytes(r.before), report.Bytes(r.peak), report.Bytes(r.peak-r.before),
			report.Bytes(r.after1s), report.Bytes(r.after10s), report.Dur(r.elapsed))
	}
	t.Print(os.Stdout)
	for _, r := range results {
		fmt.Printf("- %s: growth %s (goal < %s): %s; argon2 checks %d (goal ≤ %d): %s\n", r.name,
			report.Bytes(r.peak-r.before), report.Bytes(goalGrowth), report.Verdict(float64(r.peak-r.before), goalGrowth, false),
			r.checks, r.maxChecks, report.Verdict(float64(r.checks), float64(r.maxChecks), false))
	}
	return nil
}

// scenario starts a fresh server, makes the link and fires the burst.
// With paced > 0 only that many tries are in flight at once.
func scenario(bin string, tries int, many, pg bool, paced int, eng engines) (result, error) {
	var r result
	dir, err := os.MkdirTemp("", "pwbench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	key := api.NewKey()
	env := append(os.Environ(),
		"SHORTLINK_DATA_DIR="+dir,
		"SHORTLINK_API_ADDR=127.0.0.1:0",
		"SHORTLINK_EDGE_ADDR=127.0.0.1:0",
		"SHORTLINK_BOOTSTRAP_API_KEY="+key,
	)
	if many {
		env = append(env, "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32")
	}
	if pg {
		name := fmt.Sprintf("pwbench_%d", time.Now().UnixNano())
		dbURL, drop, err := freshDatabase(eng.postgres, name)
		if err != nil {
			return r, err
		}
		defer drop()
		chURL, err := url.Parse(eng.clickhouse)
		if err != nil {
			return r, fmt.Errorf("-clickhouse: %w", err)
		}
		chURL.Path = "/" + name // the server creates it
		defer dropClickHouse(chURL.String(), name)
		env = append(env, "SHORTLINK_DATABASE_URL="+dbURL, "SHORTLINK_CLICKHOUSE_URL="+chURL.String())
	}
	p, err := proc.Start(proc.Spec{Name: "shortlink serve", Bin: filepath.Join(bin, "shortlink"), Args: []string{"serve"}, Env: env})
	if err != nil {
		return r, err
	}
	defer func() {
		if err := p.Stop(30 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "pwbench: stop:", err)
		}
	}()
	found, err := p.Await(90*time.Second, apiLine, edgeLine)
	if err != nil {
		return r, err
	}
	apiBase, edgeBase := found[0], found[1]
	slug, err := createPasswordLink(apiBase, key)
	if err != nil {
		return r, err
	}
	target := edgeBase + slug

	tr := &http.Transport{MaxIdleConnsPerHost: tries, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	client := &http.Client{Timeout: 120 * time.Second, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// The form once: the link is cached and the server warm.
	if resp, err := client.Get(target); err != nil {
		return r, err
	} else {
		resp.Body.Close()
	}
	time.Sleep(time.Second)
	mem, err := p.Mem()
	if err != nil {
		return r, err
	}
	r.before = mem.RSS
	// From here VmHWM is the burst's peak, not the start's (Linux ≥ 4.0).
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.PID()), []byte("5"), 0); err != nil {
		return r, fmt.Errorf("cannot reset the peak RSS: %w", err)
	}

	r.status = map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	if paced <= 0 {
		paced = tries
	}
	slots := make(chan struct{}, paced)
	for i := range tries {
		wg.Go(func() {
			<-start
			slots <- struct{}{}
			defer func() { <-slots }()
			form := url.Values{"password": {fmt.Sprintf("wrong-%d", i)}}.Encode()
			req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if many {
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
			}
			resp, err := client.Do(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.transportErrs++
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			r.status[resp.StatusCode]++
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	r.elapsed = time.Since(t0)
	r.sent = tries

	time.Sleep(time.Second)
	if mem, err = p.Mem(); err != nil {
		return r, err
	}
	r.after1s, r.peak = mem.RSS, mem.Peak
	time.Sleep(9 * time.Second)
	if mem, err = p.Mem(); err != nil {
		return r, err
	}
	r.after10s = mem.RSS
	met, err := api.Scrape(context.Background(), edgeBase+"metrics")
	if err != nil {
		return r, err
	}
	r.checks = met.Int("shortlink_edge_password_checks_total")
	r.shed = met.Int("shortlink_edge_password_checks_shed_total")
	if _, ok := met["shortlink_edge_password_checks_total"]; !ok {
		return r, errors.New("the edge's /metrics has no shortlink_edge_password_checks_total")
	}
	return r, nil
}

// createPasswordLink creates a link with a password and returns its slug.
func createPasswordLink(apiBase, key string) (string, error) {
	body, _ := json.Marshal(map[string]string{"destinationUrl": "https://example.com/vault", "password": "correct-horse-battery"})
	req, _ := http.NewRequest(http.MethodPost, apiBase+"/links", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("create link: %d %s", resp.StatusCode, b)
	}
	var env struct {
		Data struct {
			Slug string `json:"slug"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return "", fmt.Errorf("create link: %w", err)
	}
	return env.Data.Slug, nil
}

// freshDatabase makes the database name on the PostgreSQL server at
// adminURL and returns its URL and a function that drops it.
func freshDatabase(adminURL, name string) (string, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", adminURL)
	if err != nil {
		return "", nil, err
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("cannot create a database on %s (-postgres): %w", adminURL, err)
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		db.Close()
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			fmt.Fprintln(os.Stderr, "pwbench: drop database:", err)
		}
		db.Close()
	}
	return u.String(), drop, nil
}

// dropClickHouse drops the ClickHouse database name of the server at dsn.
func dropClickHouse(dsn, name string) {
	opts, err := clickhouse.ParseDSN(dsn)
	if err == nil {
		var conn driver.Conn
		if conn, err = clickhouse.Open(opts); err == nil {
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = conn.Exec(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pwbench: drop ClickHouse database:", err)
	}
}
