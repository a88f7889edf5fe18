package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortlink.dev/shared/config"
	"shortlink.dev/shared/webhook"
)

// DispatcherOptions configure a Dispatcher.
type DispatcherOptions struct {
	Store  webhook.Store
	Sender *Sender
	// Schedule holds the delays of the retries (SHORTLINK_WEBHOOK_RETRY_SCHEDULE):
	// after the first attempt fails, len(Schedule) more are made.
	Schedule []time.Duration
	Logger   *slog.Logger
	// Poll is how often the outbox is read when nothing wakes the
	// dispatcher (default 1 s): changes made by other processes, and retries.
	Poll time.Duration
	// Workers bounds the attempts this dispatcher makes at once
	// (SHORTLINK_WEBHOOK_CONCURRENCY, default 256). An attempt waiting on a
	// slow receiver costs a goroutine and a connection, not a thread, so
	// this is generous: the scarce thing is each endpoint's share.
	Workers int
	// PerEndpoint bounds the attempts of one webhook in flight at once,
	// across every dispatcher on the database
	// (SHORTLINK_WEBHOOK_ENDPOINT_CONCURRENCY, default 2).
	PerEndpoint int
	// PerWorkspace bounds the attempts of one workspace's webhooks, all of
	// them together, in flight at once, across every dispatcher on the
	// database (SHORTLINK_WEBHOOK_WORKSPACE_CONCURRENCY, default 32): one
	// workspace with many webhooks at a hanging receiver holds at most
	// this many of the Workers, whatever its number of webhooks.
	PerWorkspace int
	// Breaker is the circuit breaker's policy (SHORTLINK_WEBHOOK_BREAKER);
	// the zero value turns it off.
	Breaker webhook.Breaker
	// Lease, when set, is how long a claimed delivery is this dispatcher's
	// (SHORTLINK_WEBHOOK_LEASE, default 1 min; tests shorten it, so that a
	// killed dispatcher's attempts are taken over sooner). It is never
	// shorter than the Sender's timeout and a second.
	Lease time.Duration
	// Now is the clock; tests may replace it.
	Now func() time.Time
	// Registry, when set, receives the dispatcher's metrics
	// (shortlink_webhook_*).
	Registry prometheus.Registerer
}

// leaseTime is how long a claimed delivery is a dispatcher's by default
// (SHORTLINK_WEBHOOK_LEASE): it outlives the longest attempt
// (SHORTLINK_WEBHOOK_TIMEOUT, 10 s by default) by far, so that only a dead
// dispatcher's deliveries are ever taken over.
const leaseTime = time.Minute

// DefaultWorkers is SHORTLINK_WEBHOOK_CONCURRENCY's default.
const DefaultWorkers = 256

// maxRetryAfter bounds how long a receiver's Retry-After may push a retry.
const maxRetryAfter = time.Hour

// Dispatcher delivers the outbox: it leases due deliveries, makes one
// attempt each and records the outcome. State lives in the store only, so
// a dispatcher killed in the middle of anything loses nothing: its leases
// end and another (or the restarted one) takes the deliveries over. Several
// dispatchers on one database each get different deliveries.
type Dispatcher struct {
	o     DispatcherOptions
	owner string
	lease time.Duration
	wake  chan struct{}
	// records bounds the attempts' outcomes being written at once. Hundreds
	// of attempts may end together (receivers timing out in step); on
	// SQLite each write waits for the one writer's lock, and a crowd of them
	// starved the API's writes past busy_timeout (SQLITE_BUSY answered 500
	// to link creation in webhookbench). A few at a time leaves the store to
	// the API too; on PostgreSQL a record takes a millisecond or two.
	records chan struct{}
	metrics *metrics
}

// maxRecords is how many outcomes a dispatcher writes at once.
const maxRecords = 4

// NewDispatcher returns a dispatcher; Run starts it.
func NewDispatcher(o DispatcherOptions) *Dispatcher {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.PerEndpoint <= 0 {
		o.PerEndpoint = webhook.DefaultEndpointConcurrency
	}
	if o.PerWorkspace <= 0 {
		o.PerWorkspace = webhook.DefaultWorkspaceConcurrency
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	host, _ := os.Hostname()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	lease := leaseTime
	if o.Lease > 0 {
		lease = o.Lease
	}
	if o.Sender != nil {
		// A lease outlives the longest attempt, whatever the settings: a
		// shorter one would let a second dispatcher make the same attempt
		// while the first still waits for its answer.
		lease = max(lease, o.Sender.Timeout()+time.Second)
	}
	return &Dispatcher{
		o: o, owner: host + "/" + hex.EncodeToString(b),
		lease:   lease,
		wake:    make(chan struct{}, 1),
		records: make(chan struct{}, maxRecords),
		metrics: newMetrics(o.Registry),
	}
}

// Notify wakes the dispatcher: deliveries were stored.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then waits for the attempts in flight.
// Deliveries are claimed fairly (ClaimFair): round-robin across
// workspaces, then across each workspace's webhooks, at most PerWorkspace
// of a workspace and PerEndpoint of a webhook in flight, none of a paused
// webhook. Each attempt that ends wakes the loop, since it makes room for
// its workspace's and webhook's next delivery.
func (d *Dispatcher) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, d.o.Workers)
	for {
		free := d.o.Workers - len(slots)
		var claimed []webhook.Claimed
		if free > 0 {
			now := d.o.Now()
			var err error
			claimed, err = d.o.Store.ClaimFair(ctx, d.owner, now, now.Add(d.lease), free, d.o.PerEndpoint, d.o.PerWorkspace)
			if err != nil && ctx.Err() == nil {
				d.o.Logger.Error("webhook outbox unreadable", "err", err)
			}
		}
		for _, c := range claimed {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-slots; d.Notify(); wg.Done() }()
				// An attempt in flight finishes even when Run is stopped:
				// its outcome is recorded, not left to a lease to expire.
				d.Attempt(context.WithoutCancel(ctx), c)
			}()
		}
		if len(claimed) > 0 && len(claimed) == free {
			continue // more may be due
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-time.After(d.o.Poll):
		}
	}
}

// Attempt makes one attempt of a delivery leased by this dispatcher and
// records it: a success, a retry on the schedule, or the end of the tries.
func (d *Dispatcher) Attempt(ctx context.Context, c webhook.Claimed) { d.attempt(ctx, c, true) }

// attempt is Attempt, with no retry after a failure unless retry.
func (d *Dispatcher) attempt(ctx context.Context, c webhook.Claimed, retry bool) {
	now := d.o.Now()
	d.metrics.inFlight.Inc()
	res := d.o.Sender.Send(ctx, c.Webhook, c.Delivery, now)
	d.metrics.inFlight.Dec()
	d.metrics.attempt(res)
	a := webhook.Attempt{
		At: now, ResponseTimeMs: int(res.Elapsed / time.Millisecond), ResponseBody: res.Body,
		Error: res.Err, OK: res.OK,
		// No answer at all: the breaker's business.
		Unreachable: !res.OK && res.Status == 0, Breaker: d.o.Breaker,
	}
	if res.Status != 0 {
		st := res.Status
		a.ResponseStatus = &st
	}
	if !res.OK && retry {
		a.Next = d.next(c.Delivery.Attempts+1, res.RetryAfter, now)
	}
	d.records <- struct{}{}
	rec, err := d.o.Store.RecordAttempt(ctx, d.owner, c.Delivery.ID, a)
	<-d.records
	if err != nil {
		if errors.Is(err, webhook.ErrLeaseLost) {
			d.o.Logger.Info("webhook attempt not recorded: the delivery is another's now, or ended",
				"delivery", c.Delivery.ID)
			return
		}
		d.o.Logger.Error("webhook attempt not recorded; it will be made again when its lease ends",
			"delivery", c.Delivery.ID, "err", err)
		return
	}
	if rec.PausedUntil != nil {
		d.metrics.paused.Inc()
		d.o.Logger.Warn("webhook paused by its circuit breaker: its receiver leaves attempts unanswered; its deliveries wait",
			"webhook", rec.WebhookID, "workspace", rec.WorkspaceID, "until", rec.PausedUntil.UTC().Format(time.RFC3339), "err", res.Err)
	}
	if rec.Disabled {
		d.metrics.disabled.Inc()
		d.o.Logger.Warn("webhook disabled after consecutive failed attempts; PATCH isActive:true enables it again",
			"webhook", rec.WebhookID, "workspace", rec.WorkspaceID, "failures", webhook.MaxConsecutiveFailures, "err", res.Err)
	}
	if a.Next != nil && a.Next.Sub(now) < d.o.Poll {
		// Due before the next poll: wake up for it, not a poll later.
		time.AfterFunc(a.Next.Sub(now), d.Notify)
	}
}

// next returns when to retry after the attempts made so far, or nil when
// the schedule is used up. A receiver's Retry-After can push a retry later
// (up to an hour), never earlier.
func (d *Dispatcher) next(attempts int, retryAfter time.Duration, now time.Time) *time.Time {
	if attempts > len(d.o.Schedule) {
		return nil
	}
	delay := d.o.Schedule[attempts-1]
	if r := min(retryAfter, maxRetryAfter); r > delay {
		delay = r
	}
	t := now.Add(delay)
	return &t
}

// Sender is how the dispatcher makes attempts.
func (d *Dispatcher) Sender() *Sender { return d.o.Sender }

// Owner is the name under which this dispatcher leases deliveries.
func (d *Dispatcher) Owner() string { return d.owner }

// Lease is how long this dispatcher's leases last.
func (d *Dispatcher) Lease() time.Duration { return d.lease }

// FromConfig returns the dispatcher the settings describe: the retry
// schedule, the SSRF guard, the extra TLS roots, the attempt timeout, the
// concurrency (in all, per workspace and per endpoint) and the circuit
// breaker.
func FromConfig(cfg *config.Config, st webhook.Store, log *slog.Logger, reg prometheus.Registerer) (*Dispatcher, error) {
	sender, err := NewSender(SenderOptions{AllowPrivate: cfg.WebhookAllowPriv, CAFile: cfg.WebhookCAFile,
		Timeout: cfg.WebhookTimeout})
	if err != nil {
		return nil, fmt.Errorf("invalid setting SHORTLINK_WEBHOOK_CA_FILE: %w", err)
	}
	return NewDispatcher(DispatcherOptions{Store: st, Sender: sender, Schedule: cfg.WebhookRetries, Logger: log,
		Workers: cfg.WebhookConcurrency, PerEndpoint: cfg.WebhookEndpointConcurrency,
		PerWorkspace: cfg.WebhookWorkspaceConcurrency, Breaker: cfg.WebhookBreaker,
		Lease: cfg.WebhookLease, Registry: reg}), nil
}
