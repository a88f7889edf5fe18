package clickhouse_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"shortlink.dev/analytics/clickhouse/chtest"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
)

// The settings of BenchmarkWriteClicksSustained.
const (
	// sustainedEnv turns the benchmark on: the number of clicks to write,
	// like 5000000. It takes minutes.
	sustainedEnv = "SHORTLINK_BENCH_SUSTAINED_CLICKS"
	// serverPidEnv names the process of the server at
	// SHORTLINK_TEST_CLICKHOUSE_URL, for its CPU time; a server the
	// benchmark starts itself needs none.
	serverPidEnv = "SHORTLINK_BENCH_CLICKHOUSE_PID"
)

// sustainedBatch is the Kafka consumer's batch size.
const sustainedBatch = 20_000

// BenchmarkWriteClicksSustained writes SHORTLINK_BENCH_SUSTAINED_CLICKS
// clicks through WriteClicks in batches of 20,000, as the Kafka consumer
// hands them over, and logs how the rate evolves as the table grows, in ten
// steps. Every click is of the same UTC day; 60 % of them go to one hot link
// (so it gathers millions of rows in one day: the worst case for the look-up
// of stored ids), the rest to 200 other links of 10 workspaces; the ids come
// from 4 edges, each numbering its own; 5 % are bots, 1 in 10 of the hot
// link's is a QR scan.
//
// Each step logs clicks/s (the time spent in WriteClicks only), the server's
// CPU time per batch (when its process is known: a server the benchmark
// starts, or SHORTLINK_BENCH_CLICKHOUSE_PID), this process's, and, when the
// server keeps system.query_log, the rows each kind of query read and its
// time; at the end, the active parts of each table and, when the server
// keeps system.part_log, the parts written and merged per batch. Run it
// alone, with -benchtime=1x and -v (the steps are logs), and the settings
// of the other tests (SHORTLINK_TEST_POSTGRES_URL and, optionally,
// SHORTLINK_TEST_CLICKHOUSE_URL):
//
//	SHORTLINK_BENCH_SUSTAINED_CLICKS=5000000 go test -run '^$' -v \
//		-bench WriteClicksSustained -benchtime=1x -timeout 1h ./analytics/clickhouse/
func BenchmarkWriteClicksSustained(b *testing.B) {
	n, err := strconv.Atoi(os.Getenv(sustainedEnv))
	if err != nil || n <= 0 {
		b.Skipf("set %s to a number of clicks (like 5000000) to run this slow benchmark", sustainedEnv)
	}
	var chURL string
	pid, _ := strconv.Atoi(os.Getenv(serverPidEnv))
	if os.Getenv(chtest.URLEnv) == "" {
		srv := chtest.StartServer(b)
		chURL, pid = chtest.Database(b, srv.URL("")), srv.Pid()
	} else {
		chURL = chtest.Start(b)
	}
	links, err := sqlstore.OpenPostgres(context.Background(), mustCreatePostgresDB(b))
	if err != nil {
		b.Fatalf("open PostgreSQL: %v", err)
	}
	b.Cleanup(func() { links.Close() })
	// log_queries has the server log them where system.query_log is set up.
	s := mustOpen(b, chURL+"?log_queries=1", links)
	w := newSustainedWorkload(b, links)
	conn := mustConnect(b, chURL)
	ctx := context.Background()

	step := max(n/10, sustainedBatch)
	var (
		total, stepClicks, stepBatches int
		stepTime, worst                time.Duration
		stepGoCPU                      time.Duration
		serverCPU                      = procCPU(pid)
		stepStart                      = time.Now()
		began                          = time.Now()
		inWrite                        time.Duration
	)
	b.ResetTimer()
	for total < n {
		batch := w.next(min(sustainedBatch, n-total))
		cpu := ownCPU()
		start := time.Now()
		if err := s.WriteClicks(ctx, batch); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		stepGoCPU += ownCPU() - cpu
		stepTime += took
		inWrite += took
		worst = max(worst, took)
		total += len(batch)
		stepClicks += len(batch)
		stepBatches++
		if stepClicks >= step || total == n {
			b.StopTimer()
			now := procCPU(pid)
			line := fmt.Sprintf("%8d rows: %7.0f clicks/s, %4.0f ms/batch (worst %4.0f), Go CPU %3.0f ms/batch",
				total, float64(stepClicks)/stepTime.Seconds(), ms(stepTime)/float64(stepBatches), ms(worst),
				ms(stepGoCPU)/float64(stepBatches))
			if pid != 0 {
				line += fmt.Sprintf(", server CPU %4.0f ms/batch", ms(now-serverCPU)/float64(stepBatches))
			}
			b.Log(line + queryLog(ctx, conn, stepStart, time.Now()))
			stepClicks, stepBatches, stepTime, worst, stepGoCPU, serverCPU = 0, 0, 0, 0, 0, now
			stepStart = time.Now()
			b.StartTimer()
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/inWrite.Seconds(), "clicks/s")
	b.Logf("%d clicks in %s (%s in WriteClicks); the hot link has %d rows", n,
		time.Since(began).Round(time.Millisecond), inWrite.Round(time.Millisecond), rowsOf(b, chURL, w.hot))
	b.Log(partsOf(ctx, conn) + partLog(ctx, conn, (n+sustainedBatch-1)/sustainedBatch))
}

// sustainedWorkload makes the batches of BenchmarkWriteClicksSustained.
type sustainedWorkload struct {
	rng     *rand.Rand
	hot     string
	hotQR   string
	others  []string
	wsOf    map[string]string
	edges   [4][8]byte
	seq     [4]uint64
	day     time.Time
	clicked int
}

func newSustainedWorkload(b *testing.B, links *sqlstore.Store) *sustainedWorkload {
	b.Helper()
	w := &sustainedWorkload{rng: rand.New(rand.NewPCG(3, 4)), wsOf: map[string]string{}}
	var workspaces []string
	for range 10 {
		workspaces = append(workspaces, storetest.MustCreateWorkspace(b, links).ID)
	}
	newLink := func(ws string) string {
		id := storetest.MustCreateLink(b, links, storetest.NewLink(ws, storetest.UniqueDomain(), "s"), -1).ID
		w.wsOf[id] = ws
		return id
	}
	w.hot = newLink(workspaces[0])
	w.hotQR = storetest.MustCreateDynamicQRCode(b, links, workspaces[0], w.hot)
	for i := range 200 {
		w.others = append(w.others, newLink(workspaces[i%len(workspaces)]))
	}
	for i := range w.edges {
		binary.BigEndian.PutUint64(w.edges[i][:], w.rng.Uint64())
	}
	w.day = time.Now().UTC().Truncate(24 * time.Hour)
	return w
}

var (
	sustainedCountries = []string{"US", "DE", "FR", "GB", "JP", "BR", "IN", ""}
	sustainedBrowsers  = []string{"Chrome", "Safari", "Firefox", "Edge"}
	sustainedDevices   = []string{click.DeviceDesktop, click.DeviceMobile, click.DeviceTablet}
	sustainedReferrers = []string{"", "t.co", "www.google.com", "news.ycombinator.com", "www.reddit.com"}
)

// next returns a batch of size new clicks, in time order within the day.
func (w *sustainedWorkload) next(size int) []click.Event {
	batch := make([]click.Event, size)
	for i := range batch {
		edge := w.rng.IntN(len(w.edges))
		w.seq[edge]++
		var id click.EventID
		copy(id[:8], w.edges[edge][:])
		binary.BigEndian.PutUint64(id[8:], w.seq[edge])
		var v click.Visitor
		binary.LittleEndian.PutUint64(v[:8], w.rng.Uint64())
		binary.LittleEndian.PutUint64(v[8:], w.rng.Uint64())
		w.clicked++
		l := w.hot
		if w.rng.IntN(10) >= 6 {
			l = w.others[w.rng.IntN(len(w.others))]
		}
		e := click.Event{
			V: click.Version, ID: id, Time: w.day.Add(time.Duration(w.clicked) * time.Millisecond), LinkID: l,
			WorkspaceID: w.wsOf[l], Domain: "sho.rt", Slug: "s", Target: "https://example.com/landing",
			Country: sustainedCountries[w.rng.IntN(len(sustainedCountries))], City: "Boston",
			Device:  sustainedDevices[w.rng.IntN(len(sustainedDevices))],
			Browser: sustainedBrowsers[w.rng.IntN(len(sustainedBrowsers))], OS: "iOS",
			Referrer: sustainedReferrers[w.rng.IntN(len(sustainedReferrers))], Trigger: click.TriggerLink,
			Bot: w.rng.IntN(20) == 0, Visitor: v,
		}
		if l == w.hot && w.rng.IntN(10) == 0 {
			e.Trigger, e.QRID = click.TriggerQR, w.hotQR
		}
		batch[i] = e
	}
	return batch
}

// queryLog sums up system.query_log's queries finished between from and to
// (whole seconds), by the start of their text: how many, the rows they read
// and their time. It returns "" when the server keeps no query log.
func queryLog(ctx context.Context, conn driver.Conn, from, to time.Time) string {
	if err := conn.Exec(ctx, `SYSTEM FLUSH LOGS`); err != nil {
		return ""
	}
	rows, err := conn.Query(ctx, `SELECT substring(replaceRegexpAll(query, '\\s+', ' '), 1, 40) AS q, count(),
			avg(read_rows), avg(query_duration_ms), max(query_duration_ms)
		FROM system.query_log
		WHERE type = 2 AND event_time BETWEEN toDateTime(?) AND toDateTime(?)
			AND (query LIKE 'INSERT INTO clicks%' OR query LIKE 'SELECT%' AND query NOT LIKE '%system.%')
		GROUP BY q ORDER BY q`, from.Unix(), to.Unix()+1)
	if err != nil {
		return ""
	}
	defer rows.Close()
	var out strings.Builder
	for rows.Next() {
		var q string
		var count uint64
		var read, avg float64
		var worst uint64
		if err := rows.Scan(&q, &count, &read, &avg, &worst); err != nil {
			return "\n\t" + err.Error()
		}
		fmt.Fprintf(&out, "\n\t%-40s ×%-4d read_rows %9.0f, %5.1f ms (worst %d)", q, count, read, avg, worst)
	}
	return out.String()
}

// partsOf describes the active parts of the database's tables.
func partsOf(ctx context.Context, conn driver.Conn) string {
	rows, err := conn.Query(ctx, `SELECT table, count(), sum(rows), sum(bytes_on_disk) FROM system.parts
		WHERE database = currentDatabase() AND active GROUP BY table ORDER BY table`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var out strings.Builder
	out.WriteString("active parts:")
	for rows.Next() {
		var table string
		var parts, n, bytes uint64
		if err := rows.Scan(&table, &parts, &n, &bytes); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&out, "\n\t%-20s %4d parts, %10d rows, %8.1f MB", table, parts, n, float64(bytes)/1e6)
	}
	return out.String()
}

// partLog sums up system.part_log's parts of the database's tables, new
// and merged, per batch: how many, their time and size. It returns "" when
// the server keeps no part log.
func partLog(ctx context.Context, conn driver.Conn, batches int) string {
	if err := conn.Exec(ctx, `SYSTEM FLUSH LOGS`); err != nil {
		return ""
	}
	rows, err := conn.Query(ctx, `SELECT table, toString(event_type) AS e, count(), sum(duration_ms), sum(size_in_bytes)
		FROM system.part_log WHERE database = currentDatabase() AND e IN ('NEW_PART', 'MERGE_PARTS')
		GROUP BY table, e ORDER BY table, e`)
	if err != nil {
		return ""
	}
	defer rows.Close()
	var out strings.Builder
	out.WriteString("\nparts written (system.part_log), per batch:")
	for rows.Next() {
		var table, event string
		var count, took, bytes uint64
		if err := rows.Scan(&table, &event, &count, &took, &bytes); err != nil {
			return "\n\t" + err.Error()
		}
		fmt.Fprintf(&out, "\n\t%-20s %-11s %5.2f parts, %6.1f ms, %8.1f KB (%.0f KB a part)", table, event,
			float64(count)/float64(batches), float64(took)/float64(batches), float64(bytes)/1e3/float64(batches),
			float64(bytes)/1e3/float64(count))
	}
	return out.String()
}

// procCPU returns the user and system CPU time of process pid so far, 0
// when pid is 0 or unreadable.
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command, which is in parentheses: utime and
	// stime are the 12th and 13th, in clock ticks of 1/100 s.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	user, _ := strconv.ParseInt(fields[11], 10, 64)
	system, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(user+system) * 10 * time.Millisecond
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
