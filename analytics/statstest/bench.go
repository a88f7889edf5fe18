package statstest

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/stats"
)

// BenchBatchSize is the size of the batches Bench writes, as the bus hands them over.
const BenchBatchSize = 1000

// BenchBatch returns a batch of BenchBatchSize clicks on 10 new links of a new
// workspace; one in 20 is a bot.
func BenchBatch(b *testing.B, s Backend) []click.Event {
	b.Helper()
	ws := s.NewWorkspace(b)
	links := make([]string, 10)
	for i := range links {
		links[i] = s.NewLink(b, ws)
	}
	batch := make([]click.Event, BenchBatchSize)
	for i := range batch {
		batch[i] = click.Event{
			V: click.Version, ID: click.NewEventID(), Time: time.Now(), LinkID: links[i%len(links)], WorkspaceID: ws,
			Domain: "sho.rt", Slug: "s", Target: "https://example.com/landing?utm_source=x",
			Country: "US", City: "Boston", Device: click.DeviceMobile, Browser: "Safari", OS: "iOS",
			Referrer: "t.co", Trigger: click.TriggerLink, Bot: i%20 == 0,
			Visitor: click.Visitor(click.NewEventID()),
		}
	}
	return batch
}

// Bench measures a backend's WriteClicks: "New" stores batches of new clicks,
// "Redelivered" hands the same batch over again, as the bus does after a
// failure (nothing new is stored, the counters are counted again). It returns
// the batch it wrote, stored.
func Bench(b *testing.B, s Backend) []click.Event {
	batch := BenchBatch(b, s)
	ctx := context.Background()
	var seq uint64
	b.Run("New", func(b *testing.B) {
		for b.Loop() {
			for i := range batch {
				seq++
				binary.BigEndian.PutUint64(batch[i].ID[8:], seq)
			}
			if err := s.WriteClicks(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "clicks/s")
	})
	if err := s.WriteClicks(ctx, batch); err != nil {
		b.Fatal(err)
	}
	b.Run("Redelivered", func(b *testing.B) {
		for b.Loop() {
			if err := s.WriteClicks(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "clicks/s")
	})
	return batch
}

// LoadedEnv names the setting that turns BenchLoaded on: the number of
// clicks to load, like 1000000 or 10000000. Loading takes minutes.
const LoadedEnv = "SHORTLINK_BENCH_LOADED_CLICKS"

// BenchLoaded loads os.Getenv(LoadedEnv) clicks of one link through
// WriteClicks, in batches of BenchBatchSize spread evenly over 30 days in
// time order, as the bus would hand them over, reports the rate, then
// measures LinkStats over those 30 days (the API's default range) and over
// the last day, and the workspace analytics of those 30 days (by country,
// referrer, link and day, and by link with a country filter). A day's visitors click twice on average; one click in 20 is
// a bot. It skips b unless the setting is there.
func BenchLoaded(b *testing.B, s Backend) {
	n, err := strconv.Atoi(os.Getenv(LoadedEnv))
	if err != nil || n <= 0 {
		b.Skipf("set %s to a number of clicks (like 1000000) to run this slow benchmark", LoadedEnv)
	}
	ws := s.NewWorkspace(b)
	link := s.NewLink(b, ws)
	const days = 30
	end := time.Now().UTC().Truncate(24 * time.Hour).Add(24*time.Hour - time.Second)
	start := end.AddDate(0, 0, -days).Add(time.Second)
	step := end.Sub(start) / time.Duration(n)
	perDay := uint64(n/days/2 + 1) // visitors of a day
	rng := rand.New(rand.NewPCG(1, 2))
	countries := []string{"US", "DE", "FR", "GB", "JP", "BR", "IN", ""}
	browsers := []string{"Chrome", "Safari", "Firefox", "Edge"}
	devices := []string{click.DeviceDesktop, click.DeviceMobile, click.DeviceTablet}
	referrers := []string{"", "t.co", "www.google.com", "news.ycombinator.com", "www.reddit.com"}
	ctx := context.Background()
	batch := make([]click.Event, 0, BenchBatchSize)
	began := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * step)
		day := uint64(at.Unix() / 86400)
		var v click.Visitor
		binary.LittleEndian.PutUint64(v[:8], mix(day<<32|rng.Uint64N(perDay)))
		binary.LittleEndian.PutUint64(v[8:], mix(^day))
		batch = append(batch, click.Event{
			V: click.Version, ID: click.NewEventID(), Time: at, LinkID: link, WorkspaceID: ws,
			Domain: "sho.rt", Slug: "s", Target: "https://example.com/",
			Country: countries[rng.IntN(len(countries))], Device: devices[rng.IntN(len(devices))],
			Browser: browsers[rng.IntN(len(browsers))], OS: "iOS", Referrer: referrers[rng.IntN(len(referrers))],
			Trigger: click.TriggerLink, Bot: rng.IntN(20) == 0, Visitor: v,
		})
		if len(batch) == BenchBatchSize || i == n-1 {
			if err := s.WriteClicks(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	loaded := time.Since(began)
	b.Logf("loaded %d clicks in %s: %.0f clicks/s", n, loaded.Round(time.Millisecond), float64(n)/loaded.Seconds())
	for _, r := range []struct {
		name string
		rng  stats.Range
	}{
		{"30Days", stats.Range{From: start.Truncate(24 * time.Hour), To: end.Truncate(24 * time.Hour)}},
		{"LastDay", stats.Range{From: end.Truncate(24 * time.Hour), To: end.Truncate(24 * time.Hour)}},
	} {
		b.Run("LinkStats"+r.name, func(b *testing.B) {
			var st *stats.LinkStats
			for b.Loop() {
				if st, err = s.LinkStats(ctx, link, r.rng); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(st.TotalClicks), "clicks")
			b.ReportMetric(float64(st.UniqueClicks), "uniques")
		})
	}
	// Workspace analytics over the 30 days (GET /analytics's default
	// range), as the control plane asks for them: the workspace's links.
	thirty := stats.Range{From: start.Truncate(24 * time.Hour), To: end.Truncate(24 * time.Hour)}
	for _, q := range []struct {
		name string
		q    stats.AnalyticsQuery
	}{
		{"ByCountry", stats.AnalyticsQuery{GroupBy: stats.DimCountry}},
		{"ByReferrer", stats.AnalyticsQuery{GroupBy: stats.DimReferrer}},
		{"ByLink", stats.AnalyticsQuery{GroupBy: stats.GroupLink}},
		{"ByDay", stats.AnalyticsQuery{GroupBy: stats.GroupDay}},
		{"ByLinkCountryDE", stats.AnalyticsQuery{GroupBy: stats.GroupLink, Filter: &stats.KeyFilter{Dim: stats.DimCountry, Key: "DE"}}},
		{"WholeByCountry", stats.AnalyticsQuery{GroupBy: stats.DimCountry, Whole: true, WorkspaceID: ws}},
	} {
		b.Run("Analytics30Days"+q.name, func(b *testing.B) {
			q.q.LinkIDs, q.q.Range = []string{link}, thirty
			var a *stats.Analytics
			for b.Loop() {
				if a, err = s.Analytics(ctx, q.q); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(a.TotalClicks), "clicks")
			b.ReportMetric(float64(a.UniqueClicks), "uniques")
		})
	}
}

// mix is SplitMix64's finalizer: it spreads x over 64 bits like a hash.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// LoadedLinksEnv names the number of links BenchAnalyticsLoaded spreads its
// clicks over (default 1000).
const LoadedLinksEnv = "SHORTLINK_BENCH_LOADED_LINKS"

// BenchAnalyticsLoaded loads os.Getenv(LoadedEnv) clicks spread over the
// links of one workspace (LoadedLinksEnv, default 1000), over 30 days as
// BenchLoaded does, then times workspace analytics over the 30 days: by
// country, city, link and day, and by link with a country filter, of the
// links named one by one (as a link filter asks), then of the whole
// workspace (as no filter asks). It skips b unless LoadedEnv is set.
func BenchAnalyticsLoaded(b *testing.B, s Backend) {
	n, err := strconv.Atoi(os.Getenv(LoadedEnv))
	if err != nil || n <= 0 {
		b.Skipf("set %s to a number of clicks (like 1000000) to run this slow benchmark", LoadedEnv)
	}
	nLinks := 1000
	if v, err := strconv.Atoi(os.Getenv(LoadedLinksEnv)); err == nil && v > 0 {
		nLinks = v
	}
	ws := s.NewWorkspace(b)
	links := make([]string, nLinks)
	for i := range links {
		links[i] = s.NewLink(b, ws)
	}
	const days = 30
	end := time.Now().UTC().Truncate(24 * time.Hour).Add(24*time.Hour - time.Second)
	start := end.AddDate(0, 0, -days).Add(time.Second)
	step := end.Sub(start) / time.Duration(n)
	perDay := uint64(n/days/2 + 1)
	rng := rand.New(rand.NewPCG(3, 4))
	countries := []string{"US", "DE", "FR", "GB", "JP", "BR", "IN", ""}
	cities := []string{"Boston", "Berlin", "Paris", "London", "Tokyo", "São Paulo", "Mumbai", ""}
	ctx := context.Background()
	batch := make([]click.Event, 0, BenchBatchSize)
	began := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * step)
		day := uint64(at.Unix() / 86400)
		var v click.Visitor
		binary.LittleEndian.PutUint64(v[:8], mix(day<<32|rng.Uint64N(perDay)))
		binary.LittleEndian.PutUint64(v[8:], mix(^day))
		c := rng.IntN(len(countries))
		batch = append(batch, click.Event{
			V: click.Version, ID: click.NewEventID(), Time: at, LinkID: links[rng.IntN(len(links))], WorkspaceID: ws,
			Domain: "sho.rt", Slug: "s", Target: "https://example.com/", Country: countries[c], City: cities[c],
			Device: click.DeviceMobile, Browser: "Safari", OS: "iOS", Trigger: click.TriggerLink, Bot: rng.IntN(20) == 0, Visitor: v,
		})
		if len(batch) == BenchBatchSize || i == n-1 {
			if err := s.WriteClicks(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	loaded := time.Since(began)
	b.Logf("loaded %d clicks over %d links in %s: %.0f clicks/s", n, nLinks, loaded.Round(time.Millisecond), float64(n)/loaded.Seconds())
	thirty := stats.Range{From: start.Truncate(24 * time.Hour), To: end.Truncate(24 * time.Hour)}
	for _, q := range []struct {
		name string
		q    stats.AnalyticsQuery
	}{
		{"ByCountry", stats.AnalyticsQuery{GroupBy: stats.DimCountry}},
		{"ByCity", stats.AnalyticsQuery{GroupBy: stats.DimCity}},
		{"ByLink", stats.AnalyticsQuery{GroupBy: stats.GroupLink}},
		{"ByDay", stats.AnalyticsQuery{GroupBy: stats.GroupDay}},
		{"ByLinkCountryDE", stats.AnalyticsQuery{GroupBy: stats.GroupLink, Filter: &stats.KeyFilter{Dim: stats.DimCountry, Key: "DE"}}},
		// The same over the whole workspace, as GET /analytics asks
		// without a link filter: a store may read its workspace rollups.
		{"WholeByCountry", stats.AnalyticsQuery{GroupBy: stats.DimCountry, Whole: true, WorkspaceID: ws}},
		{"WholeByCity", stats.AnalyticsQuery{GroupBy: stats.DimCity, Whole: true, WorkspaceID: ws}},
		{"WholeByLink", stats.AnalyticsQuery{GroupBy: stats.GroupLink, Whole: true, WorkspaceID: ws}},
		{"WholeByDay", stats.AnalyticsQuery{GroupBy: stats.GroupDay, Whole: true, WorkspaceID: ws}},
		{"WholeByDayCountryDE", stats.AnalyticsQuery{GroupBy: stats.GroupDay, Whole: true, WorkspaceID: ws,
			Filter: &stats.KeyFilter{Dim: stats.DimCountry, Key: "DE"}}},
	} {
		b.Run("Analytics30Days"+q.name, func(b *testing.B) {
			q.q.LinkIDs, q.q.Range = links, thirty
			var a *stats.Analytics
			for b.Loop() {
				if a, err = s.Analytics(ctx, q.q); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(a.TotalClicks), "clicks")
			b.ReportMetric(float64(a.UniqueClicks), "uniques")
		})
	}
}
