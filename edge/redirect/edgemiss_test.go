package redirect

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/valyala/fasthttp"

	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/config"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/link"
)

const emDomain = "localhost:8081"

// emSource is a KeySource and BatchSource in memory that counts its reads.
// A scan lists a copy of the links taken when it starts (its snapshot); when
// scanGate is set, it stops half-way until the channel is closed.
type emSource struct {
	mu       sync.Mutex
	links    map[[2]string]*link.Link
	scanGate chan struct{}
	scanning chan struct{} // closed when a gated scan reached its gate
	delay    time.Duration // of every read

	single, batches, batchKeys, scans atomic.Int64
}

func newEMSource(slugs ...string) *emSource {
	s := &emSource{links: map[[2]string]*link.Link{}}
	for _, sl := range slugs {
		s.put(sl)
	}
	return s
}

func (s *emSource) put(slug string) {
	s.mu.Lock()
	s.links[[2]string{emDomain, slug}] = &link.Link{ID: "lnk_" + slug, WorkspaceID: "ws", Domain: emDomain, Slug: slug,
		DestinationURL: "https://example.com/" + slug, Tags: []string{}}
	s.mu.Unlock()
}

func (s *emSource) remove(slug string) {
	s.mu.Lock()
	delete(s.links, [2]string{emDomain, slug})
	s.mu.Unlock()
}

func (s *emSource) lookups() int64 { return s.single.Load() + s.batches.Load() }

func (s *emSource) ResolveLink(_ context.Context, domain, slug string) (*link.Link, error) {
	s.single.Add(1)
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.links[[2]string{domain, slug}]; ok {
		return l, nil
	}
	return nil, fault.NotFoundf("link")
}

func (s *emSource) ResolveLinks(_ context.Context, keys [][2]string) ([]*link.Link, error) {
	s.batches.Add(1)
	s.batchKeys.Add(int64(len(keys)))
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*link.Link
	for _, k := range keys {
		if l, ok := s.links[k]; ok {
			out = append(out, l)
		}
	}
	return out, nil
}

func (s *emSource) CountLinkKeys(context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.links), nil
}

func (s *emSource) ScanLinkKeys(ctx context.Context, fn func(domain, slug []byte)) error {
	s.scans.Add(1)
	s.mu.Lock()
	var keys [][2]string
	for k := range s.links {
		keys = append(keys, k)
	}
	gate, reached := s.scanGate, s.scanning
	s.scanGate = nil
	s.mu.Unlock()
	for i, k := range keys {
		if gate != nil && i == len(keys)/2 {
			close(reached)
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		fn([]byte(k[0]), []byte(k[1]))
	}
	return nil
}

func (s *emSource) ResolveGallery(context.Context, string, string) (*gallery.Gallery, error) {
	return nil, fault.NotFoundf("gallery")
}

func (s *emSource) IsVerifiedDomain(context.Context, string) (bool, error) { return false, nil }
func (s *emSource) ChargeClick(context.Context, string) (bool, error)      { return true, nil }
func (s *emSource) ClickLimitReached(context.Context, string) (bool, error) {
	return false, nil
}

// emEdge returns an edge on src whose changes come from the returned bus.
func emEdge(t testing.TB, src Source) (*Edge, *bus.Memory) {
	t.Helper()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	b := bus.NewMemory(bus.MemoryOptions{})
	go b.Consume(func(context.Context, []click.Event) error { return nil })
	e, err := New(Options{Config: cfg, Source: src, Clicks: b, Changes: b, Secret: []byte("edgemiss-secret"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Shutdown(context.Background())
		b.Close(context.Background())
	})
	return e, b
}

// awaitFilter waits until the edge's filter answers, built n times.
func awaitFilter(t testing.TB, e *Edge, builds int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for e.cache.exist.live.Load() == nil || readCounter(e.cache.exist.builds) < float64(builds) {
		if time.Now().After(deadline) {
			t.Fatal("the filter of the slugs that exist was not built in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// readCounter returns a counter's value.
func readCounter(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// emLink asks the edge for slug, as a request does, and reports whether it exists.
func emLink(t testing.TB, e *Edge, slug string) bool {
	t.Helper()
	l, err := e.cache.link(context.Background(), emDomain, []byte(slug), time.Now())
	if err != nil {
		t.Fatalf("%s: %v", slug, err)
	}
	return !l.Absent()
}

func publish(t testing.TB, b *bus.Memory, c bus.LinkChange) {
	t.Helper()
	if err := b.PublishLinkChange(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

// TestEdgeMissFilterAnswersAbsentSlugs: once built, the filter answers
// absent slugs without a read of the store, and an existing link is read.
func TestEdgeMissFilterAnswersAbsentSlugs(t *testing.T) {
	src := newEMSource("a", "b")
	e, _ := emEdge(t, src)
	awaitFilter(t, e, 1)
	for i := range 1000 {
		if emLink(t, e, fmt.Sprintf("absent%d", i)) {
			t.Fatalf("absent%d exists", i)
		}
	}
	// A false positive (rate 0.1%) costs a read: allow a few.
	if n := src.lookups(); n > 5 {
		t.Fatalf("1000 absent slugs read the store %d times; want ~0", n)
	}
	if !emLink(t, e, "a") || !emLink(t, e, "b") {
		t.Fatal("an existing link was answered absent")
	}
	if v := readCounter(e.cache.exist.absent); v < 995 {
		t.Fatalf("shortlink_edge_filter_absent_total = %v, want about 1000", v)
	}
}

// TestEdgeMissFilterCreatedAfterBuild: a link created after the filter was
// built is found once its change arrived; before it, the filter held it absent
// (so the test proves the change stream is what adds it).
func TestEdgeMissFilterCreatedAfterBuild(t *testing.T) {
	src := newEMSource("a")
	e, b := emEdge(t, src)
	awaitFilter(t, e, 1)
	src.put("fresh")
	if emLink(t, e, "fresh") {
		t.Fatal("the filter let a slug it does not hold reach the store: it is not in use")
	}
	publish(t, b, bus.LinkChange{LinkID: "lnk_fresh", Domain: emDomain, Slug: "fresh"})
	if !emLink(t, e, "fresh") {
		t.Fatal("a link created after the filter was built, its change delivered, is answered absent")
	}
}

// TestEdgeMissFilterDeleted: a deleted link stays in the filter (a false
// positive) but its change evicts it and the store says it is gone: 404.
func TestEdgeMissFilterDeleted(t *testing.T) {
	src := newEMSource("a", "gone")
	e, b := emEdge(t, src)
	awaitFilter(t, e, 1)
	if !emLink(t, e, "gone") {
		t.Fatal("gone is missing before its deletion")
	}
	src.remove("gone")
	publish(t, b, bus.LinkChange{LinkID: "lnk_gone", Domain: emDomain, Slug: "gone"})
	before := src.lookups()
	if emLink(t, e, "gone") {
		t.Fatal("a deleted link is still served")
	}
	if src.lookups() != before+1 {
		t.Fatalf("the deleted link's key should cost one read of the store (a false positive), took %d", src.lookups()-before)
	}
}

// TestEdgeMissFilterStartupRace: a link created while the filter's scan
// runs (after its snapshot) is added by its change, which the set being
// built takes; and until the first build completed every miss reads the
// store.
func TestEdgeMissFilterStartupRace(t *testing.T) {
	src := newEMSource()
	for i := range 100 {
		src.put(fmt.Sprintf("old%d", i))
	}
	src.scanGate, src.scanning = make(chan struct{}), make(chan struct{})
	gate := src.scanGate
	e, b := emEdge(t, src)
	<-src.scanning
	// Mid-scan: the filter does not answer yet; a new link, not in the
	// scan's snapshot, is created and its change published.
	src.put("during")
	if !emLink(t, e, "during") {
		t.Fatal("before the filter is built a miss must read the store")
	}
	publish(t, b, bus.LinkChange{LinkID: "lnk_during", Domain: emDomain, Slug: "during"})
	e.Evict(emDomain, "during")
	close(gate)
	awaitFilter(t, e, 1)
	e.Evict(emDomain, "during")
	if !emLink(t, e, "during") {
		t.Fatal("a link created during the filter's scan is answered absent once it is built")
	}
	for i := range 100 {
		if !emLink(t, e, fmt.Sprintf("old%d", i)) {
			t.Fatalf("old%d, in the scan, is answered absent", i)
		}
	}
}

// TestEdgeMissFilterReset: changes missed (the change stream's reset) stop
// the filter at once, so a link whose change was lost is served, and a new
// build takes it in.
func TestEdgeMissFilterReset(t *testing.T) {
	src := newEMSource("a")
	e, b := emEdge(t, src)
	awaitFilter(t, e, 1)
	src.put("missed") // its change never arrives
	if emLink(t, e, "missed") {
		t.Fatal("the filter is not in use")
	}
	src.scanGate, src.scanning = make(chan struct{}), make(chan struct{})
	gate := src.scanGate
	publish(t, b, bus.LinkChange{Kind: bus.KindReset})
	if !emLink(t, e, "missed") {
		t.Fatal("after a reset the filter still answers a link whose change was missed as absent")
	}
	close(gate)
	awaitFilter(t, e, 2)
	e.Evict(emDomain, "missed")
	if !emLink(t, e, "missed") {
		t.Fatal("the build after a reset does not hold a link whose change was missed")
	}
}

// TestEdgeMissBatchesDifferentLinks: many misses of different links at once
// are read in few queries, and each gets its own link or 404.
func TestEdgeMissBatchesDifferentLinks(t *testing.T) {
	src := newEMSource()
	for i := range 400 {
		src.put(fmt.Sprintf("l%d", i))
	}
	src.delay = 2 * time.Millisecond
	e, _ := emEdge(t, src)
	e.cache.exist.close() // every miss reaches the batcher
	e.cache.exist.live.Store(nil)
	var wg sync.WaitGroup
	errs := make(chan error, 500)
	for i := range 500 { // 400 links and 100 absent slugs
		wg.Add(1)
		go func() {
			defer wg.Done()
			slug := fmt.Sprintf("l%d", i)
			l, err := e.cache.link(context.Background(), emDomain, []byte(slug), time.Now())
			switch {
			case err != nil:
				errs <- err
			case i < 400 && (l.Absent() || l.Slug() != slug):
				errs <- fmt.Errorf("%s: got %+v", slug, l)
			case i >= 400 && !l.Absent():
				errs <- fmt.Errorf("%s exists", slug)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n := src.lookups()
	if n > 50 {
		t.Fatalf("500 concurrent misses of different links took %d queries; want them batched", n)
	}
	if src.batches.Load() == 0 {
		t.Fatal("no batched query was made")
	}
	if v := readCounter(e.cache.reads.lookups); int64(v) != n {
		t.Fatalf("shortlink_edge_store_lookups_total = %v, the store saw %d queries", v, n)
	}
	t.Logf("500 misses: %d queries (%d batched, %d keys in batches)", n, src.batches.Load(), src.batchKeys.Load())
}

// TestEdgeMissAloneIsReadAtOnce: a miss on a quiet edge waits for no
// batch window: it is read alone, with ResolveLink.
func TestEdgeMissAloneIsReadAtOnce(t *testing.T) {
	src := newEMSource("a")
	e, _ := emEdge(t, src)
	if !emLink(t, e, "a") {
		t.Fatal("a is absent")
	}
	if src.single.Load() != 1 || src.batches.Load() != 0 {
		t.Fatalf("a lone miss took %d single and %d batched reads", src.single.Load(), src.batches.Load())
	}
}

// TestEdgeMissAbsentDoesNotAllocate: an absent slug answered by the filter
// costs no allocation in the handler.
func TestEdgeMissAbsentDoesNotAllocate(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are meaningless under -race")
	}
	src := newEMSource("a")
	e, _ := emEdge(t, src)
	awaitFilter(t, e, 1)
	ctx := benchRequest("/nosuchslug")
	e.Handle(ctx)
	if ctx.Response.StatusCode() != fasthttp.StatusNotFound {
		t.Fatalf("status %d", ctx.Response.StatusCode())
	}
	allocs := testing.AllocsPerRun(1000, func() {
		ctx.Response.Reset()
		e.Handle(ctx)
	})
	if allocs != 0 {
		t.Fatalf("an absent slug allocates %.1f times", allocs)
	}
	if src.lookups() != 0 {
		t.Fatalf("absent slugs read the store %d times", src.lookups())
	}
}

// BenchmarkEdgeMissAbsent: a request for an absent slug, answered by the
// filter.
func BenchmarkEdgeMissAbsent(b *testing.B) {
	src := newEMSource("a")
	e, _ := emEdge(b, src)
	awaitFilter(b, e, 1)
	ctx := benchRequest("/nosuchslug")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Handle(ctx)
		ctx.Response.Reset()
	}
}

// staleBus is the in-process bus with a CaughtUp the test sets, as Kafka's.
type staleBus struct {
	*bus.Memory
	at atomic.Int64
}

func (s *staleBus) CaughtUp() time.Time { return time.Unix(0, s.at.Load()) }

// TestEdgeMissFilterStaleStream: while the change stream has not caught up
// (the broker away), the filter answers nothing, so a link whose change
// cannot arrive is served from the store; once it caught up again the
// filter is built anew, with that link.
func TestEdgeMissFilterStaleStream(t *testing.T) {
	defer func(d time.Duration) { filterStaleAfter = d }(filterStaleAfter)
	filterStaleAfter = 200 * time.Millisecond
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	sb := &staleBus{Memory: bus.NewMemory(bus.MemoryOptions{})}
	sb.at.Store(time.Now().Add(time.Hour).UnixNano()) // fresh for the build
	go sb.Consume(func(context.Context, []click.Event) error { return nil })
	src := newEMSource("a")
	e, err := New(Options{Config: cfg, Source: src, Clicks: sb, Changes: sb, Secret: []byte("edgemiss-secret")})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(context.Background())
	defer e.Shutdown(context.Background())
	awaitFilter(t, e, 1)
	src.put("late")
	if emLink(t, e, "late") {
		t.Fatal("the filter is not in use")
	}
	sb.at.Store(time.Now().Add(-time.Minute).UnixNano()) // the broker went away a minute ago
	if !emLink(t, e, "late") {
		t.Fatal("with the change stream behind, the filter still answers a link whose change cannot arrive as absent")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !e.cache.exist.stale.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the filter did not notice the stale stream")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sb.at.Store(time.Now().Add(time.Hour).UnixNano()) // caught up again
	awaitFilter(t, e, 2)
	e.Evict(emDomain, "late")
	if !emLink(t, e, "late") {
		t.Fatal("the filter built after the stream caught up lacks a link created while it was behind")
	}
	before := src.lookups()
	if emLink(t, e, "absent-again") || src.lookups() != before {
		t.Fatal("the rebuilt filter does not answer absent slugs")
	}
}

// TestEdgeMissNoAbsentFilter: with NoAbsentFilter every miss reads the
// store (the change stream does not carry every change).
func TestEdgeMissNoAbsentFilter(t *testing.T) {
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	b := bus.NewMemory(bus.MemoryOptions{})
	go b.Consume(func(context.Context, []click.Event) error { return nil })
	defer b.Close(context.Background())
	src := newEMSource("a")
	e, err := New(Options{Config: cfg, Source: src, Clicks: b, Changes: b, Secret: []byte("edgemiss-secret"), NoAbsentFilter: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	time.Sleep(50 * time.Millisecond) // a filter, were there one, would be built
	src.put("other-process")          // created by a process whose changes this edge does not hear
	if e.cache.exist != nil || !emLink(t, e, "other-process") {
		t.Fatal("with NoAbsentFilter the edge still filters absent slugs")
	}
	if src.scans.Load() != 0 {
		t.Fatal("with NoAbsentFilter the edge scanned the store's keys")
	}
}
