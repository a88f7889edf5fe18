// Package lost counts the clicks that a crash lost between the click-limit
// ledger and the stats: shortlink_clicks_lost_total.
//
// A limited link's click is charged in its ledger (link_limit_shards) before
// the edge offers it to the bus, which never blocks a redirect; a process
// killed between the two, or before its buffered clicks reached the store,
// leaves clicks that the ledger counts and the analytics pipeline never
// stores. clickCount shows the ledger's count (sqlstore's clickCount), and
// the stats (totalClicks) miss those clicks: this package makes the
// difference visible.
//
// The ledger keeps no time of its charges, so a click on its way through the
// pipeline looks like a lost one for a moment. A Checker reads, for each
// link whose ledger and stored count are apart, the ledger, and again at
// least After later the stored count: every click of the first reading was
// charged After ago, so it is stored by then or lost (After is the
// pipeline's bound). The ledger's first reading minus the stored count is a
// lower bound of what was lost, exact once the link is quiet. Each rise of
// that gap is counted once, by whichever process finds it first (the gap is
// kept on the link, links.clicks_lost, and moved with a compare-and-set).
package lost

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortlink.dev/shared/sqlstore"
)

// Store is where the ledgers, the stored counts and the settled gaps are:
// *sqlstore.Store.
type Store interface {
	ClickGaps(ctx context.Context) ([]sqlstore.ClickGap, error)
	MoveClicksLost(ctx context.Context, linkID string, from, to int64) (bool, error)
}

// Checker compares the ledgers with the stored counts and counts the clicks
// lost.
type Checker struct {
	store Store
	after time.Duration
	log   *slog.Logger
	lost  prometheus.Counter
	now   func() time.Time

	// seen is each apart link's ledger as read at some time.
	seen map[string]reading
}

type reading struct {
	ledger int64
	at     time.Time
}

// New returns a checker that counts a click as lost when it is not stored
// after (SHORTLINK_CLICKS_LOST_AFTER) after its link's ledger charged it. It
// registers shortlink_clicks_lost_total with reg.
func New(store Store, after time.Duration, reg prometheus.Registerer, log *slog.Logger) *Checker {
	c := &Checker{
		store: store, after: after, log: log, now: time.Now, seen: map[string]reading{},
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortlink_clicks_lost_total",
			Help: "Clicks that a link's click-limit ledger charged and the click store never stored (a crash between the charge and the store), each counted once by one process.",
		}),
	}
	reg.MustRegister(c.lost)
	return c
}

// Interval is how often Run checks: a quarter of After, so that a gap is
// counted at most about 1.25 × After after the ledger's last charge of it,
// and at least once a minute.
func (c *Checker) Interval() time.Duration {
	return min(max(c.after/4, 100*time.Millisecond), time.Minute)
}

// Run checks every Interval until ctx ends. A failed check is logged and
// tried again at the next.
func (c *Checker) Run(ctx context.Context) {
	t := time.NewTicker(c.Interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.Check(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("cannot compare the click ledgers with the stored clicks", "err", err)
		}
	}
}

// Check reads the apart links once, counts the gaps whose first reading is
// at least After old, and keeps the new readings.
func (c *Checker) Check(ctx context.Context) error {
	gaps, err := c.store.ClickGaps(ctx)
	if err != nil {
		return err
	}
	now := c.now()
	seen := make(map[string]reading, len(gaps))
	for _, g := range gaps {
		r, ok := c.seen[g.LinkID]
		switch {
		case !ok:
			seen[g.LinkID] = reading{g.Ledger, now}
			continue
		case now.Sub(r.at) < c.after:
			seen[g.LinkID] = r
			continue
		}
		seen[g.LinkID] = reading{g.Ledger, now}
		// Every click of r.ledger was charged After ago or more: what the
		// store does not count now is lost. Clicks charged since and stored
		// already make this smaller, never larger, than the loss.
		settled := max(r.ledger-g.Count, 0)
		to := g.Lost
		switch {
		case settled > g.Lost:
			to = settled
		case r.ledger == g.Ledger:
			// Quiet for After: the gap is exact. It is smaller than the one
			// counted when clicks arrived later than After (they stay
			// counted); following it down lets a later loss count again.
			to = settled
		}
		if to == g.Lost {
			continue
		}
		moved, err := c.store.MoveClicksLost(ctx, g.LinkID, g.Lost, to)
		if err != nil {
			return err
		}
		if moved && to > g.Lost {
			c.lost.Add(float64(to - g.Lost))
			c.log.Warn("clicks charged by a link's click limit were never stored", "link", g.LinkID,
				"lost", to-g.Lost, "ledger", g.Ledger, "stored", g.Count)
		}
	}
	c.seen = seen
	return nil
}
