// Command importbench measures an import job (issue 23, point 4) against
// the real standalone binary (`bin/shortlink serve`, fresh data folder,
// 127.0.0.1 only): it builds a CSV of -links links in the server's own
// export format (its header read from GET /links/export), sends it to POST
// /imports with source csv, follows the job to its end, and meanwhile
// keeps redirecting a link through the edge from -clients clients. It
// prints a markdown table: links/s from the 202 to the job's end, and the
// redirects' p50 and p99 before the import and during it. Rows: SQLite,
// then PostgreSQL (a fresh database on -postgres, "" to skip it; the
// standalone binary then wants ClickHouse too: -clickhouse's server, else
// a clickhouse-server importbench starts for the row, as anbench does, and
// the row is skipped when none is installed).
//
// The csv source's reader comes with issue 23's sources: a server that
// cannot read it yet answers so, and the row says it was skipped.
//
// Usage (from the repository root, after `make build`):
//
//	go run ./benchmarks/cmd/importbench [-bin bin] [-links 100000] [-clients 4] [-postgres URL] [-clickhouse URL]
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"shortlink.dev/analytics/clickhouse/chserver"
	wire "shortlink.dev/api"
	"shortlink.dev/benchmarks/internal/api"
	"shortlink.dev/benchmarks/internal/proc"
	"shortlink.dev/benchmarks/internal/report"
)

var (
	apiLine  = regexp.MustCompile(`(?m)^\s*API:\s+(http://\S+/api/v1)\s*$`)
	edgeLine = regexp.MustCompile(`(?m)^\s*Edge:\s+(http://\S+/)\s*$`)
)

// goalRate is issue 23's goal: links imported a second.
const goalRate = 5000

func main() {
	bin := flag.String("bin", "bin", "folder of the built binaries (make build)")
	links := flag.Int("links", 100000, "links in the imported file")
	clients := flag.Int("clients", 4, "clients redirecting during the import")
	pgURL := os.Getenv("SHORTLINK_LOCAL_POSTGRES_URL")
	if pgURL == "" {
		pgURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	pg := flag.String("postgres", pgURL, "PostgreSQL server where a fresh database is made for the PostgreSQL row (\"\": skip it)")
	ch := flag.String("clickhouse", os.Getenv("SHORTLINK_TEST_CLICKHOUSE_URL"), "ClickHouse server (clickhouse://host:port/) for the PostgreSQL row (\"\": start a clickhouse-server)")
	only := flag.String("only", "", "run one row only: SQLite or PostgreSQL (\"\": both)")
	flag.Parse()
	if err := run(*bin, *links, *clients, *pg, *ch, *only); err != nil {
		fmt.Fprintln(os.Stderr, "importbench:", err)
		os.Exit(1)
	}
}

// result is one row's figures.
type result struct {
	engine         string
	skipped        string
	job            wire.ImportJob
	took           time.Duration
	before, during []time.Duration
	errored        int
}

func run(bin string, n, clients int, pg, ch, only string) error {
	m := report.ReadMachine()
	var results []result
	for _, engine := range []string{"SQLite", "PostgreSQL"} {
		if only != "" && !strings.EqualFold(only, engine) {
			continue
		}
		if engine == "PostgreSQL" && pg == "" {
			fmt.Fprintln(os.Stderr, "importbench: PostgreSQL skipped: -postgres is empty")
			continue
		}
		if engine == "PostgreSQL" && ch == "" {
			stop, url, err := startClickHouse()
			if err != nil {
				fmt.Fprintln(os.Stderr, "importbench: PostgreSQL skipped:", err)
				results = append(results, result{engine: engine, skipped: err.Error()})
				continue
			}
			defer stop()
			ch = url
		}
		fmt.Fprintf(os.Stderr, "importbench: %s, %d links\n", engine, n)
		r, err := scenario(bin, n, clients, engine == "PostgreSQL", pg, ch)
		if err != nil {
			return fmt.Errorf("%s: %w", engine, err)
		}
		r.engine = engine
		results = append(results, r)
	}
	fmt.Printf("## Import: %s links from a CSV of our own export format\n\n", report.Int(int64(n)))
	fmt.Println(m.Markdown())
	fmt.Printf("Each row: a fresh `bin/shortlink serve`; POST /imports (source csv) of a file of %s links "+
		"(slug, destination, title, a tag, a created date); links/s from the 202 to the job's end (default "+
		"SHORTLINK_IMPORT_PAUSE); meanwhile %d clients redirect one link through the edge, one request at a time each.\n\n",
		report.Int(int64(n)), clients)
	t := report.NewTable("engine", "created", "failed", "took", "links/s", "redirect p50 before", "p99 before", "p50 during", "p99 during", "redirects during", "errors")
	for _, r := range results {
		if r.skipped != "" {
			t.Add(r.engine, "skipped: "+r.skipped, "", "", "", "", "", "", "", "", "")
			continue
		}
		sort.Slice(r.before, func(i, j int) bool { return r.before[i] < r.before[j] })
		sort.Slice(r.during, func(i, j int) bool { return r.during[i] < r.during[j] })
		t.Add(r.engine, r.job.Created, r.job.Failed, report.Dur(r.took), fmt.Sprintf("%.0f", rate(r)),
			report.Dur(report.Percentile(r.before, .5)), report.Dur(report.Percentile(r.before, .99)),
			report.Dur(report.Percentile(r.during, .5)), report.Dur(report.Percentile(r.during, .99)), len(r.during), r.errored)
	}
	t.Print(os.Stdout)
	for _, r := range results {
		if r.skipped == "" {
			fmt.Printf("- %s: %.0f links/s (goal ≥ %d): %s\n", r.engine, rate(r), goalRate, report.Verdict(rate(r), goalRate, true))
		}
	}
	return nil
}

func rate(r result) float64 { return float64(r.job.Created) / r.took.Seconds() }

// scenario starts a fresh server and runs the import beside redirects.
func scenario(bin string, n, clients int, pg bool, pgURL, chURL string) (result, error) {
	var r result
	dir, err := os.MkdirTemp("", "importbench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	key := api.NewKey()
	env := append(os.Environ(), "SHORTLINK_DATA_DIR="+dir, "SHORTLINK_API_ADDR=127.0.0.1:0",
		"SHORTLINK_EDGE_ADDR=127.0.0.1:0", "SHORTLINK_BOOTSTRAP_API_KEY="+key, "SHORTLINK_BOOTSTRAP_PLAN=enterprise")
	if pg {
		name := fmt.Sprintf("importbench_%d", time.Now().UnixNano())
		dbURL, drop, err := freshDatabase(pgURL, name)
		if err != nil {
			return r, err
		}
		defer drop()
		cu, err := url.Parse(chURL)
		if err != nil {
			return r, fmt.Errorf("-clickhouse: %w", err)
		}
		cu.Path = "/" + name
		defer dropClickHouse(cu.String(), name)
		env = append(env, "SHORTLINK_DATABASE_URL="+dbURL, "SHORTLINK_CLICKHOUSE_URL="+cu.String())
	}
	p, err := proc.Start(proc.Spec{Name: "shortlink serve", Bin: filepath.Join(bin, "shortlink"), Args: []string{"serve"}, Env: env})
	if err != nil {
		return r, err
	}
	defer func() {
		if err := p.Stop(30 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "importbench: stop:", err)
		}
	}()
	found, err := p.Await(90*time.Second, apiLine, edgeLine)
	if err != nil {
		return r, err
	}
	apiBase, edgeBase := found[0], found[1]
	c := api.New(apiBase, key)
	ctx := context.Background()
	if _, err := c.CreateLink(ctx, "hot", "https://example.com/hot"); err != nil {
		return r, err
	}
	file, err := buildCSV(c, n)
	if err != nil {
		return r, err
	}

	stop := make(chan struct{})
	var mu sync.Mutex
	var during bool
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				res, err := client.Get(edgeBase + "hot")
				d := time.Since(start)
				ok := err == nil && res.StatusCode == http.StatusFound
				if err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
				mu.Lock()
				switch {
				case !ok:
					r.errored++
				case during:
					r.during = append(r.during, d)
				default:
					r.before = append(r.before, d)
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(3 * time.Second)
	mu.Lock()
	during = true
	mu.Unlock()

	start := time.Now()
	job, skipped, err := postImport(c, file)
	if err == nil && skipped == "" {
		job, err = await(c, job.ID)
	}
	r.took = time.Since(start)
	close(stop)
	wg.Wait()
	// The server logs where the job's time went (reading, checking and
	// writing, pausing): shown beside the table.
	for _, line := range strings.Split(p.Stdout()+p.Stderr(), "\n") {
		if strings.Contains(line, "this run's time") {
			fmt.Fprintln(os.Stderr, "importbench: server:", line)
		}
	}
	r.job, r.skipped = job, skipped
	return r, err
}

// buildCSV writes n links under the header of the server's own export.
func buildCSV(c *api.Client, n int) ([]byte, error) {
	body, err := get(c, "/links/export?format=csv")
	if err != nil {
		return nil, err
	}
	header, err := csv.NewReader(bytes.NewReader(body)).Read()
	if err != nil {
		return nil, fmt.Errorf("the export's header: %w", err)
	}
	created := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC).Format(time.RFC3339)
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(header)
	row := make([]string, len(header))
	for i := range n {
		for j, col := range header {
			switch col {
			case "slug":
				row[j] = fmt.Sprintf("imp-%d", i)
			case "destinationUrl":
				row[j] = fmt.Sprintf("https://example.com/page/%d?utm_source=flyer", i)
			case "title":
				row[j] = fmt.Sprintf("Page %d", i)
			case "tags":
				row[j] = `["imported"]`
			case "createdAt", "updatedAt":
				row[j] = created
			case "isArchived", "hasPassword":
				row[j] = "false"
			case "clickCount":
				row[j] = fmt.Sprint(i % 50)
			default:
				row[j] = ""
			}
		}
		w.Write(row)
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// postImport sends the file; skipped says why the server cannot import it.
func postImport(c *api.Client, file []byte) (wire.ImportJob, string, error) {
	var j wire.ImportJob
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("source", "csv")
	fw, _ := mw.CreateFormFile("file", "links.csv")
	fw.Write(file)
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, c.Base+"/imports", &b)
	if err != nil {
		return j, "", err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := c.HTTP.Do(req)
	if err != nil {
		return j, "", err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode == http.StatusBadRequest && bytes.Contains(body, []byte("cannot read that source yet")) {
		return j, "this build has no csv source", nil
	}
	if res.StatusCode != http.StatusAccepted {
		return j, "", fmt.Errorf("POST /imports: %d %s", res.StatusCode, body)
	}
	return j, "", decodeData(body, &j)
}

// await follows the job until it ends.
func await(c *api.Client, id string) (wire.ImportJob, error) {
	var j wire.ImportJob
	for {
		body, err := get(c, "/imports/"+id)
		if err != nil {
			return j, err
		}
		if err := decodeData(body, &j); err != nil {
			return j, err
		}
		switch j.Status {
		case wire.ImportDone:
			return j, nil
		case wire.ImportFailed, wire.ImportCanceled:
			return j, fmt.Errorf("the job ended %s: %v", j.Status, j.Error)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func get(c *api.Client, path string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, c.Base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	res, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %d %s", path, res.StatusCode, body)
	}
	return body, err
}

func decodeData(body []byte, v any) error {
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || !env.Success {
		return errors.New("not a success envelope: " + string(body))
	}
	return json.Unmarshal(env.Data, v)
}

// freshDatabase creates the database name on the server at adminURL and
// returns its URL and how to drop it.
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
	return u.String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		db.Close()
	}, nil
}

// startClickHouse starts a clickhouse-server of its own (chserver, in a
// temporary folder) for the PostgreSQL row, and returns how to stop it and
// its clickhouse:// URL.
func startClickHouse() (func(), string, error) {
	bin, err := chserver.Find()
	if err != nil {
		return nil, "", fmt.Errorf("no -clickhouse and %w", err)
	}
	dir, err := os.MkdirTemp("", "importbench-ch-")
	if err != nil {
		return nil, "", err
	}
	fmt.Fprintln(os.Stderr, "importbench: starting", bin)
	srv, err := chserver.Start(context.Background(), chserver.Config{Dir: dir, Binary: bin})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("cannot start clickhouse-server: %w", err)
	}
	return func() {
		srv.Stop()
		os.RemoveAll(dir)
	}, srv.URL(""), nil
}

// dropClickHouse drops the ClickHouse database name of the server at dsn.
func dropClickHouse(dsn, name string) {
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn.Exec(ctx, "DROP DATABASE IF EXISTS `"+name+"`")
}
