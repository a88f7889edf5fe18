package bus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"shortlink.dev/shared/crashpoint"
)

// RelayOptions tune a Relay; zero values take the defaults.
type RelayOptions struct {
	// Owner names this relay in the outbox's leases (default: random). An
	// owner that stays the same when the process starts again (the control
	// plane keeps it in its data folder) lets Run take back, at once, the
	// changes the previous run held when it died; it must name one running
	// relay at a time.
	Owner string
	// Poll is how often the relay looks for changes nobody woke it for:
	// those of a process that died before it published them, or of
	// another control plane (default 1 s).
	Poll time.Duration
	// Lease is how long a claimed change is this relay's alone; one that
	// dies holding changes delays them by at most this (default 15 s).
	Lease time.Duration
	// Batch is the most changes claimed at once (default 100), Concurrency
	// the most published at once (default 64): each may wait for the edges'
	// acknowledgements (up to 2 s when an edge died without a goodbye, or
	// stopped), so publishes overlap, and Run claims more while some wait,
	// up to Concurrency in flight.
	Batch, Concurrency int
	// PublishTimeout bounds one attempt to publish a change (default 5 s).
	PublishTimeout time.Duration
	// BackoffMin and BackoffMax bound the pause after a round that failed
	// to publish (defaults 100 ms and 1 s): short, so that changes go out
	// within a second or two of the broker's return.
	BackoffMin, BackoffMax time.Duration
	// Await bounds how long a request waits for its changes (Tracker.Wait;
	// default 2.5 s: Kafka's echo wait of 2 s and the outbox's round trip).
	Await  time.Duration
	Logger *slog.Logger
}

// Relay publishes the changes of the outbox to the bus and deletes each once
// published. A change that fails to publish stays in the outbox and is tried
// again, with a growing pause, until the bus takes it. Several relays (one
// per control plane) may share an outbox: each change is leased to one at a
// time, and published at least once.
type Relay struct {
	out  Outbox
	to   LinkChanges
	o    RelayOptions
	wake chan struct{}

	mu sync.Mutex
	// waiting are the trackers waiting for a change, by its id.
	waiting map[string]*Tracker
	// recent are ids published before any tracker asked for them (the
	// relay may take a change in the moment between its commit and the
	// request's Tracker learning its id); recentOrder bounds them.
	recent      map[string]struct{}
	recentOrder []string

	// failing is set while rounds fail, so that an outage is logged when
	// it starts, every warnEvery while it lasts, and when it ends; and so
	// that requests do not wait for changes the bus will not take now.
	// stopped is set once Run returned (shutdown): nobody publishes.
	failing  atomic.Bool
	stopped  atomic.Bool
	lastWarn time.Time
}

// warnEvery spaces the relay's warnings while the bus refuses changes.
const warnEvery = 30 * time.Second

// maxRecent bounds the ids Relay remembers as published with nobody waiting.
const maxRecent = 4096

// NewRelay returns a relay from the outbox to the bus; Run runs it.
func NewRelay(out Outbox, to LinkChanges, o RelayOptions) *Relay {
	if o.Owner == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.Owner = "relay-" + hex.EncodeToString(b[:])
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Lease <= 0 {
		o.Lease = 15 * time.Second
	}
	if o.Batch <= 0 {
		o.Batch = 100
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 64
	}
	if o.PublishTimeout <= 0 {
		o.PublishTimeout = 5 * time.Second
	}
	if o.BackoffMin <= 0 {
		o.BackoffMin = 100 * time.Millisecond
	}
	if o.BackoffMax < o.BackoffMin {
		o.BackoffMax = max(time.Second, o.BackoffMin)
	}
	if o.Await <= 0 {
		o.Await = 2500 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Relay{
		out: out, to: to, o: o, wake: make(chan struct{}, 1),
		waiting: map[string]*Tracker{}, recent: map[string]struct{}{},
	}
}

// Wake tells the relay that changes were stored: the store calls it after
// every commit that stored some.
func (r *Relay) Wake() {
	select {
	case r.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// Track returns a context whose writes' changes (WithChanges) the returned
// tracker waits for.
func (r *Relay) Track(ctx context.Context) (context.Context, *Tracker) {
	t := &Tracker{r: r, left: map[string]bool{}, changed: make(chan struct{})}
	return context.WithValue(ctx, trackerKey{}, t), t
}

// Run publishes until ctx ends; run it once per relay. It claims changes at
// once: changes a crashed process left are published at start. Before that
// it ends the leases its owner holds (ReleaseOwner): those of a previous run
// under the same owner that died holding a batch, which would otherwise wait
// for their leases to end (Lease, 15 s).
//
// Publishing is pipelined: the relay claims and publishes new changes while
// earlier publishes still wait (for the edges' acknowledgements: up to 2 s
// for an edge that stopped answering), up to Concurrency changes in flight.
// A change stored while a slow publish waits therefore goes out at once, not
// after it. While the bus refuses changes it publishes one batch at a time,
// with a growing pause between batches.
func (r *Relay) Run(ctx context.Context) {
	r.stopped.Store(false)
	defer r.stopped.Store(true)
	if n, err := r.out.ReleaseOwner(ctx, r.o.Owner); err != nil {
		if ctx.Err() == nil {
			r.o.Logger.Warn("cannot release the changes a previous run left leased; they wait for their leases to end",
				"owner", r.o.Owner, "err", err)
		}
	} else if n > 0 {
		r.o.Logger.Info("took back the link changes a previous run left leased", "owner", r.o.Owner, "changes", n)
	}
	poll := time.NewTicker(r.o.Poll)
	defer poll.Stop()
	var (
		results  = make(chan publishResult, r.o.Concurrency)
		inFlight int
		// claim is set when changes may wait: at start, on a wake-up, a
		// poll, after a full claim, and once a pause ended.
		claim = true
		// pause is the current pause after a failure; resume, when set,
		// ends it.
		pause  time.Duration
		resume <-chan time.Time
		// batch collects the outcome of the publishes of a failing
		// period, so that the outage is logged once for them.
		done, failed []string
		firstErr     error
		// stop is ctx.Done() until it fired once: then Run only waits
		// for the publishes in flight.
		stop = ctx.Done()
	)
	settle := func() {
		// A context of its own: changes published while Run was asked
		// to stop are deleted all the same. The delete may lag the
		// publishes: a change published twice only makes caches forget
		// twice.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		ok := true
		if len(done) > 0 {
			if err := r.out.DeleteChanges(sctx, done); err != nil {
				r.o.Logger.Error("cannot delete published changes; they will be published again", "changes", len(done), "err", err)
				ok = false
			}
		}
		if len(failed) > 0 {
			ok = false
			if !r.failing.Load() || time.Since(r.lastWarn) >= warnEvery {
				r.o.Logger.Warn("cannot publish link changes; they wait in the outbox and are retried",
					"changes", len(failed), "err", firstErr)
				r.lastWarn = time.Now()
			}
			r.failing.Store(true)
			if err := r.out.ReleaseChanges(sctx, r.o.Owner, failed); err != nil {
				r.o.Logger.Error("cannot release unpublished changes; they are retried when their lease ends", "err", err)
			}
		} else if len(done) > 0 && r.failing.Load() {
			r.failing.Store(false)
			r.o.Logger.Info("publishing link changes again")
		}
		done, failed, firstErr = done[:0], failed[:0], nil
		if ok {
			pause = 0
			return
		}
		pause = min(max(2*pause, r.o.BackoffMin), r.o.BackoffMax)
		resume = time.After(pause)
	}
	collect := func(res publishResult) {
		inFlight--
		if res.err != nil {
			failed = append(failed, res.id)
			if firstErr == nil {
				firstErr = res.err
			}
			return
		}
		done = append(done, res.id)
	}
	for {
		// While the bus refuses changes, one batch at a time (each of its
		// publishes may wait out PublishTimeout), after the pause.
		// A refusal seen (failed) stops the claims until the pause.
		canClaim := ctx.Err() == nil && claim && resume == nil && inFlight < r.o.Concurrency &&
			len(failed) == 0 && (!r.failing.Load() || inFlight == 0)
		if canClaim {
			claim = false
			n := min(r.o.Batch, r.o.Concurrency-inFlight)
			claimed, ok := r.claim(ctx, n)
			switch {
			case !ok:
				pause = min(max(2*pause, r.o.BackoffMin), r.o.BackoffMax)
				resume = time.After(pause)
			case len(claimed) == n:
				claim = true // more may wait
			}
			for _, c := range claimed {
				inFlight++
				go r.publish(ctx, c, results)
			}
			if claim && inFlight < r.o.Concurrency {
				continue
			}
		}
		if ctx.Err() != nil && inFlight == 0 {
			if len(done)+len(failed) > 0 {
				settle()
			}
			return
		}
		select {
		case res := <-results:
			collect(res)
			// Take every outcome that is in, then delete (or release)
			// them with one statement.
		drain:
			for inFlight > 0 {
				select {
				case res := <-results:
					collect(res)
				default:
					break drain
				}
			}
			if len(failed) > 0 && inFlight > 0 && ctx.Err() == nil {
				// Wait for the rest of the failing batch: the outage is
				// logged once for it and the pause starts after it.
				continue
			}
			settle()
		case <-r.wake:
			claim = true
		case <-poll.C:
			claim = true
		case <-resume:
			resume = nil
			claim = true
		case <-stop:
			stop = nil
		}
	}
}

// publishResult is the outcome of one publish of Run.
type publishResult struct {
	id  string
	err error
}

// claim leases up to n changes; false when the outbox cannot be read.
func (r *Relay) claim(ctx context.Context, n int) ([]StoredChange, bool) {
	now := time.Now()
	claimed, err := r.out.ClaimChanges(ctx, r.o.Owner, now, now.Add(r.o.Lease), n)
	if err != nil {
		if ctx.Err() == nil {
			r.o.Logger.Error("cannot read the change outbox; retrying", "err", err)
		}
		return nil, false
	}
	if len(claimed) > 0 {
		// The fault tests kill the process here: it dies holding the
		// batch's leases, which the next run under the same owner takes
		// back at start.
		crashpoint.Here("change-after-claim")
	}
	return claimed, true
}

// publish publishes one claimed change and sends its outcome to results.
func (r *Relay) publish(ctx context.Context, c StoredChange, results chan<- publishResult) {
	pctx, cancel := context.WithTimeout(ctx, r.o.PublishTimeout)
	err := r.to.PublishLinkChange(pctx, c.LinkChange)
	cancel()
	if err == nil {
		// The request waiting for it answers now, not when the other
		// publishes in flight return.
		r.published([]string{c.ID})
	}
	results <- publishResult{id: c.ID, err: err}
}

// published tells the trackers waiting for the ids.
func (r *Relay) published(ids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		t := r.waiting[id]
		if t == nil {
			r.remember(id)
			continue
		}
		delete(r.waiting, id)
		delete(t.left, id)
		close(t.changed)
		t.changed = make(chan struct{})
	}
}

// remember keeps id among the recently published, forgetting the oldest.
func (r *Relay) remember(id string) {
	if len(r.recentOrder) >= maxRecent {
		delete(r.recent, r.recentOrder[0])
		r.recentOrder = r.recentOrder[1:]
	}
	r.recent[id] = struct{}{}
	r.recentOrder = append(r.recentOrder, id)
}

// Backlog returns what waits in the outbox.
func (r *Relay) Backlog(ctx context.Context) (Backlog, error) { return r.out.ChangeBacklog(ctx) }
