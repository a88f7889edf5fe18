package e2e

// The analytics consumer group under a crash (issue 24, point 2): three
// analytics processes share the clicks topic's twelve partitions while the
// edge redirects without pause; one is killed -9 and another started. Every
// click the edge redirected must be stored and counted once, and the group's
// lag must come back to zero in bounded time. docs/analytics.md ("The
// consumer group") quotes the figures.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	kafkago "github.com/segmentio/kafka-go"
)

// The consumer group's figures: the topic's partitions, the group id of
// every analytics process (deploy/app/bus.go) and the members the test keeps.
const (
	cgPartitions = 12
	cgGroup      = "analytics"
	cgMembers    = 3
	cgTopic      = "clicks"
)

// cgCreateTopic creates the clicks topic with n partitions on the broker of
// dataDir's engines before any process of the server starts, as an operator
// does who wants more consumers than the default six partitions allow
// (EnsureTopics leaves an existing topic alone), and stops the broker again:
// the server's launch starts it on the same port and folder, which keep the
// topic.
func cgCreateTopic(t *testing.T, dataDir string, n int) {
	t.Helper()
	needSplit(t)
	eng := enginesFor(t, dataDir)
	b, err := eng.startBroker(t)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := (&kafkago.Dialer{}).DialContext(ctx, "tcp", "127.0.0.1:"+eng.brokerPort)
	if err != nil {
		t.Fatal(err)
	}
	err = conn.CreateTopics(kafkago.TopicConfig{Topic: cgTopic, NumPartitions: n, ReplicationFactor: 1,
		ConfigEntries: []kafkago.ConfigEntry{{ConfigName: "compression.type", ConfigValue: "lz4"}}})
	conn.Close()
	if err != nil {
		t.Fatalf("create the topic %s with %d partitions: %v", cgTopic, n, err)
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
}

// cgClient is a Kafka client on the server's broker, for the group's state.
type cgClient struct {
	c *kafkago.Client
}

func newCGClient(s *Server) *cgClient {
	return &cgClient{c: &kafkago.Client{Addr: kafkago.TCP("127.0.0.1:" + s.eng.brokerPort), Timeout: 5 * time.Second}}
}

// partitions is the topic's partition count, as the broker says.
func (k *cgClient) partitions(ctx context.Context) (int, error) {
	md, err := k.c.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{cgTopic}})
	if err != nil {
		return 0, err
	}
	for _, tp := range md.Topics {
		if tp.Name == cgTopic {
			if tp.Error != nil {
				return 0, tp.Error
			}
			return len(tp.Partitions), nil
		}
	}
	return 0, fmt.Errorf("no topic %s", cgTopic)
}

// offsets returns, per partition, the end of the log (the offset the next
// record gets) and the group's committed offset (-1: none yet).
func (k *cgClient) offsets(ctx context.Context) (end, committed []int64, err error) {
	var reqs []kafkago.OffsetRequest
	parts := make([]int, cgPartitions)
	for p := range cgPartitions {
		reqs = append(reqs, kafkago.LastOffsetOf(p))
		parts[p] = p
	}
	lo, err := k.c.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{cgTopic: reqs}})
	if err != nil {
		return nil, nil, err
	}
	end = make([]int64, cgPartitions)
	for _, po := range lo.Topics[cgTopic] {
		if po.Error != nil {
			return nil, nil, po.Error
		}
		end[po.Partition] = po.LastOffset
	}
	of, err := k.c.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: cgGroup, Topics: map[string][]int{cgTopic: parts}})
	if err != nil {
		return nil, nil, err
	}
	if of.Error != nil {
		return nil, nil, of.Error
	}
	committed = make([]int64, cgPartitions)
	for _, p := range of.Topics[cgTopic] {
		if p.Error != nil {
			return nil, nil, p.Error
		}
		committed[p.Partition] = p.CommittedOffset
	}
	return end, committed, nil
}

// lag is the records written and not committed, summed over the partitions.
func lag(end, committed []int64) int64 {
	var n int64
	for p := range end {
		n += end[p] - max(committed[p], 0)
	}
	return n
}

// cgMember is a member of the group and its partitions of the clicks topic.
type cgMember struct {
	id    string
	parts []int
}

// assignment returns the group's state and its members.
func (k *cgClient) assignment(ctx context.Context) (state string, members []cgMember, err error) {
	r, err := k.c.DescribeGroups(ctx, &kafkago.DescribeGroupsRequest{GroupIDs: []string{cgGroup}})
	if err != nil {
		return "", nil, err
	}
	for _, g := range r.Groups {
		if g.Error != nil {
			return "", nil, g.Error
		}
		for _, m := range g.Members {
			var parts []int
			for _, tp := range m.MemberAssignments.Topics {
				if tp.Topic == cgTopic {
					parts = append(parts, tp.Partitions...)
				}
			}
			sort.Ints(parts)
			members = append(members, cgMember{id: m.MemberID, parts: parts})
		}
		state = g.GroupState
	}
	return state, members, nil
}

// awaitBalanced waits up to d until the group is stable with n members,
// exactly fresh of which are not in before, that share the partitions
// evenly; it returns the members' ids and how long that took.
func (k *cgClient) awaitBalanced(t *testing.T, n, fresh int, before map[string]bool, d time.Duration) (map[string]bool, time.Duration) {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < d {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		state, members, err := k.assignment(ctx)
		cancel()
		last = fmt.Sprintf("state %q, members %v, err %v", state, members, err)
		if err == nil && state == "Stable" && len(members) == n {
			var all []int
			even, ids, added := true, map[string]bool{}, 0
			for _, m := range members {
				all = append(all, m.parts...)
				even = even && len(m.parts) == cgPartitions/n
				ids[m.id] = true
				if !before[m.id] {
					added++
				}
			}
			slices.Sort(all)
			if even && added == fresh && len(slices.Compact(all)) == cgPartitions {
				return ids, time.Since(start)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the group %q did not settle on %d members (%d new) sharing %d partitions within %v: %s",
		cgGroup, n, fresh, cgPartitions, d, last)
	return nil, 0
}

// lagSample is the group's lag at a moment.
type lagSample struct {
	at             time.Time
	end, committed []int64
}

// lagWatch samples the group's lag every 100 ms until stopped.
type lagWatch struct {
	k        *cgClient
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	mu      sync.Mutex
	samples []lagSample
	errs    int
}

func watchLag(k *cgClient) *lagWatch {
	w := &lagWatch{k: k, stop: make(chan struct{})}
	w.wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			end, committed, err := k.offsets(ctx)
			cancel()
			w.mu.Lock()
			if err != nil {
				w.errs++
			} else {
				w.samples = append(w.samples, lagSample{at: time.Now(), end: end, committed: committed})
			}
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	})
	return w
}

// Stop stops the sampling; it may be called more than once.
func (w *lagWatch) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	w.wg.Wait()
}

// latest is the last sample.
func (w *lagWatch) latest() (lagSample, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.samples) == 0 {
		return lagSample{}, false
	}
	return w.samples[len(w.samples)-1], true
}

// maxLag is the largest lag sampled in [from, to).
func (w *lagWatch) maxLag(from, to time.Time) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var m int64
	for _, s := range w.samples {
		if !s.at.Before(from) && s.at.Before(to) {
			m = max(m, lag(s.end, s.committed))
		}
	}
	return m
}

// drained is the first sample at or after from whose committed offsets
// reach ends on every partition: everything written up to then is stored
// and committed.
func (w *lagWatch) drained(from time.Time, ends []int64) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.samples {
		if s.at.Before(from) {
			continue
		}
		ok := true
		for p := range ends {
			ok = ok && max(s.committed[p], 0) >= ends[p]
		}
		if ok {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// startAnalytics starts one more analytics process of the server, with a
// data folder of its own, and stops it (SIGTERM, exit 0) when the test ends
// unless killed before.
func startAnalytics(t *testing.T, s *Server, name string) *proc {
	t.Helper()
	p, err := startProc(name, splitBins.analytics, s.eng.env(filepath.Join(s.DataDir, name), s.Settings...))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.awaitBanner(90*time.Second, metricsLine); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-p.exited:
			// Killed, or stopped by the test (which checked its exit):
			// only an exit with an error status is the process's own.
			if p.err != nil && p.cmd.ProcessState != nil && p.cmd.ProcessState.Exited() {
				t.Errorf("%s exited on its own (%v)\nstderr:\n%s", name, p.err, tail(p.stderr.String(), 4000))
			}
			return
		default:
		}
		if err := p.stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("stderr of %s:\n%s", name, tail(p.stderr.String(), 8000))
		}
	})
	return p
}

// rawClicks counts what ClickHouse holds: the rows of clicks (a click
// inserted twice is two rows until a merge collapses them), its distinct
// event ids, and the clicks the rollup link_days counted at insert time
// (where a second insert stays counted).
func rawClicks(t *testing.T, chURL string) (rows, ids, rolled uint64) {
	t.Helper()
	opts, err := ch.ParseDSN(chURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ch.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := conn.QueryRow(ctx, `SELECT count(), uniqExact(event_id) FROM clicks WHERE bot = 0`).Scan(&rows, &ids); err != nil {
		t.Fatalf("count the clicks in ClickHouse: %v", err)
	}
	if err := conn.QueryRow(ctx, `SELECT countMerge(clicks) FROM link_days`).Scan(&rolled); err != nil {
		t.Fatalf("count the rolled-up clicks in ClickHouse: %v", err)
	}
	return rows, ids, rolled
}

// cgRun is a consumer-group test's deployment: a split server on a clicks
// topic of cgPartitions partitions, links on every partition, the edge's
// click load and the group's lag sampled all along.
type cgRun struct {
	t     *testing.T
	start time.Time
	s     *Server
	k     *cgClient
	key   string
	links []Link
	watch *lagWatch
	load  *clickLoad
	// loadStart and loadEnd are when the load started and ended.
	loadStart, loadEnd time.Time
}

// startCGRun starts the server (and its analytics process, the group's
// first member), then the extra analytics processes, waits for the group of
// 1+extra members to share the partitions, and makes the links.
func startCGRun(t *testing.T, extra ...string) *cgRun {
	t.Helper()
	needSplit(t)
	r := &cgRun{t: t, start: time.Now()}
	dir := t.TempDir()
	cgCreateTopic(t, dir, cgPartitions)
	r.s = startEdgeServer(t, dir, "SHORTLINK_BOOTSTRAP_API_KEY="+randomKey())
	r.k = newCGClient(r.s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	n, err := r.k.partitions(ctx)
	cancel()
	if err != nil || n != cgPartitions {
		t.Fatalf("the clicks topic has %d partitions (%v), want %d: the processes' EnsureTopics must leave the topic alone", n, err, cgPartitions)
	}
	for _, name := range extra {
		startAnalytics(t, r.s, name)
	}
	w := r.s.NewWorkspace(t, "enterprise")
	r.key = w.Key
	// Links until every partition has two: the edge keys a click by its
	// link id, and kafka-go's Hash balancer picks its partition.
	perPartition := make([]int, cgPartitions)
	all := make([]int, cgPartitions)
	for p := range all {
		all[p] = p
	}
	for slices.Min(perPartition) < 2 {
		if len(r.links) == 200 {
			t.Fatalf("200 links fill the partitions %v", perPartition)
		}
		l := r.s.createLink(t, w.Key, obj{"destinationUrl": fmt.Sprintf("https://example.com/cgroup/%d", len(r.links))})
		r.links = append(r.links, l)
		perPartition[(&kafkago.Hash{}).Balance(kafkago.Message{Key: []byte(l.ID)}, all...)]++
	}
	return r
}

// startLoad starts the lag's sampling and the edge's clicks, and waits for
// 1,500 of them.
func (r *cgRun) startLoad() {
	r.t.Helper()
	r.watch = watchLag(r.k)
	r.t.Cleanup(r.watch.Stop)
	r.load = startClickLoad(r.t, func() string { return r.s.EdgeBase }, r.links, 4, false)
	r.t.Cleanup(r.load.end)
	r.loadStart = time.Now()
	r.load.awaitMore("at the start", 1500)
}

// stopLoad ends the clicks and waits up to a minute for the group's lag to
// be zero, which it returns the time of.
func (r *cgRun) stopLoad() (redirected int64, zero time.Time) {
	t := r.t
	t.Helper()
	redirected, failed := r.load.Stop()
	r.loadEnd = time.Now()
	if failed != 0 {
		t.Errorf("%d redirects failed, the first: %s", failed, r.load.firstBad)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if s, ok := r.watch.latest(); ok && s.at.After(r.loadEnd) && lag(s.end, s.committed) == 0 {
			zero = s.at
			break
		}
		if time.Now().After(deadline) {
			s, _ := r.watch.latest()
			t.Fatalf("the group's lag is still %d records (end %v, committed %v) %v after the load ended",
				lag(s.end, s.committed), s.end, s.committed, time.Since(r.loadEnd).Round(time.Second))
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.watch.Stop()
	return redirected, zero
}

// cgCounts is what the deployment counted of the clicks.
type cgCounts struct {
	clickCount, totalClicks int64
	rows, ids, rolled       uint64
	lost, twice             int64
}

func (c cgCounts) String() string {
	return fmt.Sprintf("clickCount %d, totalClicks %d, ClickHouse rows %d, distinct ids %d, rolled up %d: lost %d, counted twice %d",
		c.clickCount, c.totalClicks, c.rows, c.ids, c.rolled, c.lost, c.twice)
}

// verify checks that every click redirected is counted once: each link's
// clickCount and stats totalClicks, and ClickHouse's rows, distinct event
// ids and rollups, against the edge's 302s.
func (r *cgRun) verify(redirected int64) cgCounts {
	t := r.t
	t.Helper()
	deadline := time.Now().Add(splitPipelineWait)
	for {
		done, over := true, false
		for i, l := range r.links {
			cc, tc, err := r.s.linkCounters(r.key, l.ID)
			want := r.load.count(i)
			done = done && err == nil && cc == want && tc == want
			// Above: counted twice already, which waiting does not undo.
			over = over || (err == nil && (cc > want || tc > want))
		}
		if done || over || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A batch stored twice lands within the consumers' next flushes.
	time.Sleep(2 * time.Second)
	var c cgCounts
	for i, l := range r.links {
		cc, tc, err := r.s.linkCounters(r.key, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := r.load.count(i)
		c.clickCount, c.totalClicks = c.clickCount+cc, c.totalClicks+tc
		c.lost += max(0, want-min(cc, tc))
		c.twice += max(0, max(cc, tc)-want)
		if cc != want || tc != want {
			t.Errorf("link %d (%s): clickCount %d, stats totalClicks %d; want the %d clicks the edge redirected", i, l.Slug, cc, tc, want)
		}
	}
	c.rows, c.ids, c.rolled = rawClicks(t, r.s.eng.chURL)
	if c.ids != uint64(redirected) || c.rolled != uint64(redirected) || c.rows != c.ids {
		t.Errorf("ClickHouse holds %d click rows, %d distinct event ids, %d clicks in the rollups; want each %d (the clicks redirected)",
			c.rows, c.ids, c.rolled, redirected)
		c.twice = max(c.twice, int64(c.rows)-int64(c.ids), int64(c.rolled)-redirected)
	}
	if d := r.s.edgeMetric(t, "shortlink_edge_clicks_dropped_total"); d != 0 {
		t.Errorf("the edge dropped %v clicks", d)
	}
	return c
}

// TestConsumerGroupKill runs three analytics consumers on a clicks topic of
// twelve partitions while the edge redirects links of every partition
// without pause, kills one with SIGKILL and starts another. Every click the
// edge answered with its 302 is stored once and counted once: each link's
// clickCount and its stats' totalClicks equal the clicks redirected, and
// ClickHouse holds exactly those clicks (rows, distinct event ids and the
// rollups' count) — 0 lost, 0 counted twice. The group's lag comes back to
// zero: the test measures how long after the kill the backlog of that
// moment is committed, and how long after the load's end every partition's
// committed offset reaches its end.
func TestConsumerGroupKill(t *testing.T) {
	r := startCGRun(t, "analytics-2", "analytics-3")
	members, took := r.k.awaitBalanced(t, cgMembers, cgMembers, nil, 60*time.Second)
	t.Logf("three consumers share the %d partitions, 4 each, %v after the links were made", cgPartitions, took.Round(time.Millisecond))
	r.startLoad()
	time.Sleep(time.Until(r.loadStart.Add(4 * time.Second)))

	// kill -9 one member in the middle of its batches, and start another.
	atKill := r.load.total()
	steadyLag := r.watch.maxLag(r.loadStart, time.Now())
	r.s.Kill(t, Analytics)
	killed := time.Now()
	atKillLag, ok := r.watch.latest()
	if !ok {
		t.Fatalf("no sample of the group's lag in %v of load (%d errors)", time.Since(r.loadStart), r.watch.errs)
	}
	startAnalytics(t, r.s, "analytics-4")
	replaced := time.Now()
	_, rebalanced := r.k.awaitBalanced(t, cgMembers, 1, members, 60*time.Second)
	t.Logf("killed one consumer after %d clicks; its replacement started %v later; "+
		"the group of three was balanced again %v after the replacement started",
		atKill, replaced.Sub(killed).Round(time.Millisecond), rebalanced.Round(time.Millisecond))

	// Clicks keep coming through the rebalance, and a while after it.
	time.Sleep(4 * time.Second)
	redirected, zero := r.stopLoad()
	drainedAt, ok := r.watch.drained(killed, atKillLag.end)
	if !ok {
		last, _ := r.watch.latest()
		t.Fatalf("the backlog at the kill (ends %v, committed %v) was never committed; at the end: ends %v, committed %v",
			atKillLag.end, atKillLag.committed, last.end, last.committed)
	}
	c := r.verify(redirected)
	t.Logf("figures: %d partitions, %d consumers, one killed -9 after %d clicks and replaced; %d clicks redirected in %v (%.0f/s); "+
		"%s; lag before the kill at most %d records; at the kill %d, at most %d after it; "+
		"the backlog of the kill committed %v after it; lag zero %v after the kill, %v after the load ended; test took %v",
		cgPartitions, cgMembers, atKill, redirected, r.loadEnd.Sub(r.loadStart).Round(time.Millisecond),
		float64(redirected)/r.loadEnd.Sub(r.loadStart).Seconds(), c, steadyLag, lag(atKillLag.end, atKillLag.committed),
		r.watch.maxLag(killed, zero), drainedAt.Sub(killed).Round(time.Millisecond),
		zero.Sub(killed).Round(time.Millisecond), zero.Sub(r.loadEnd).Round(time.Millisecond), time.Since(r.start).Round(time.Second))
}

// TestConsumerGroupRebalance moves the partitions between live consumers
// under load, where a member's batch in hand meets the member that takes
// its partitions: two consumers, a third joins, then one of the first
// leaves (SIGTERM, a clean stop). Every click still counts once. The
// store's look-up of stored ids alone lets the two members insert the same
// clicks (2 runs of 5 counted 415 and 195 twice); the consumers' fence
// (kafka.ConsumerOptions.Fence) makes the second wait for the first.
func TestConsumerGroupRebalance(t *testing.T) {
	r := startCGRun(t, "analytics-2")
	members, _ := r.k.awaitBalanced(t, 2, 2, nil, 60*time.Second)
	r.startLoad()
	time.Sleep(time.Until(r.loadStart.Add(3 * time.Second)))

	joinedAt := time.Now()
	startAnalytics(t, r.s, "analytics-3")
	three, joined := r.k.awaitBalanced(t, 3, 1, members, 60*time.Second)
	time.Sleep(3 * time.Second)
	left := r.s.procOf(t, Analytics)
	if err := (*left).stop(); err != nil {
		t.Fatal(err)
	}
	*left = nil
	_, rebalanced := r.k.awaitBalanced(t, 2, 0, three, 60*time.Second)
	time.Sleep(3 * time.Second)
	redirected, zero := r.stopLoad()
	c := r.verify(redirected)
	t.Logf("figures: %d partitions; a third consumer joined two under load (balanced %v after its start), then one left "+
		"(SIGTERM; balanced %v later); %d clicks redirected in %v (%.0f/s); %s; lag at most %d records before the join, "+
		"%d after; lag zero %v after the load ended; test took %v",
		cgPartitions, joined.Round(time.Millisecond), rebalanced.Round(time.Millisecond), redirected,
		r.loadEnd.Sub(r.loadStart).Round(time.Millisecond), float64(redirected)/r.loadEnd.Sub(r.loadStart).Seconds(), c,
		r.watch.maxLag(r.loadStart, joinedAt), r.watch.maxLag(joinedAt, zero), zero.Sub(r.loadEnd).Round(time.Millisecond),
		time.Since(r.start).Round(time.Second))
}
