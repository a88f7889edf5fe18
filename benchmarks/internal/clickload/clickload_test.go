package clickload

import (
	"context"
	"errors"
	"testing"
	"time"

	"shortlink.dev/shared/click"
)

var testLink = Link{ID: "lnk_1", WorkspaceID: "ws_1", Domain: "localhost:8081", Slug: "s", Target: "https://example.com/"}

// recorder is a Writer that keeps what it was handed.
type recorder struct {
	batches int
	events  []click.Event
	fail    bool
}

func (r *recorder) WriteClicks(_ context.Context, batch []click.Event) error {
	if r.fail {
		return errors.New("disk full")
	}
	r.batches++
	r.events = append(r.events, batch...)
	return nil
}

func TestLoad(t *testing.T) {
	to := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	from := to.AddDate(0, 0, -30)
	const n = 20000
	var w recorder
	var last int64
	res, err := Load(context.Background(), &w, NewGenerator(testLink, n, from, to, 1), 3000, func(written int64) { last = written })
	if err != nil {
		t.Fatal(err)
	}
	if res.Clicks != n || len(w.events) != n || last != n || w.batches != 7 {
		t.Fatalf("wrote %d clicks (%d stored, progress %d) in %d batches; want %d in 7", res.Clicks, len(w.events), last, w.batches, n)
	}
	ids := map[click.EventID]bool{}
	visitors := map[click.Visitor]bool{}
	countries := map[string]int{}
	devices := map[string]int{}
	referrers := map[string]bool{}
	var bots int64
	prev := from
	for _, e := range w.events {
		if e.Time.Before(prev) || !e.Time.Before(to) {
			t.Fatalf("click at %s: not in time order within [%s, %s)", e.Time, from, to)
		}
		prev = e.Time
		if e.LinkID != testLink.ID || e.WorkspaceID != testLink.WorkspaceID || e.V != click.Version {
			t.Fatalf("click %+v is not of the link", e)
		}
		ids[e.ID] = true
		visitors[e.Visitor] = true
		countries[e.Country]++
		devices[e.Device]++
		referrers[e.Referrer] = true
		if e.Bot {
			bots++
		}
	}
	if len(ids) != n {
		t.Errorf("%d distinct event ids of %d", len(ids), n)
	}
	if res.Humans != n-bots {
		t.Errorf("humans %d, want %d", res.Humans, n-bots)
	}
	// The spreads, loosely: 3 % bots, 30 % US, 52 % desktop, many visitors and referrers.
	within := func(what string, got, want, tol float64) {
		t.Helper()
		if got < want-tol || got > want+tol {
			t.Errorf("%s: %.3f, want %.3f ± %.3f", what, got, want, tol)
		}
	}
	within("bots", float64(bots)/n, 0.03, 0.01)
	within("US", float64(countries["US"])/n, 0.30, 0.03)
	within("desktop", float64(devices[click.DeviceDesktop])/n, 0.52, 0.03)
	if len(countries) < 30 || len(referrers) < 100 || len(visitors) < n/3 {
		t.Errorf("%d countries, %d referrers, %d visitors: too few", len(countries), len(referrers), len(visitors))
	}
}

func TestGeneratorIsDeterministic(t *testing.T) {
	to := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	a, b := NewGenerator(testLink, 100, to.AddDate(0, 0, -1), to, 7), NewGenerator(testLink, 100, to.AddDate(0, 0, -1), to, 7)
	ea, eb := a.Fill(make([]click.Event, 100)), b.Fill(make([]click.Event, 100))
	for i := range ea {
		ea[i].ID, eb[i].ID = click.EventID{}, click.EventID{} // ids are unique by design
		if ea[i] != eb[i] {
			t.Fatalf("click %d differs:\n%+v\n%+v", i, ea[i], eb[i])
		}
	}
	if a.Left() != 0 || len(a.Fill(make([]click.Event, 10))) != 0 {
		t.Error("the generator made more clicks than asked")
	}
}

func TestLoadStopsOnError(t *testing.T) {
	to := time.Now()
	_, err := Load(context.Background(), &recorder{fail: true}, NewGenerator(testLink, 10, to.Add(-time.Hour), to, 1), 5, nil)
	if err == nil {
		t.Fatal("a failing writer did not fail the load")
	}
}
