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
	// Workers bounds the attempts made at once (default 8).
	Workers int
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// leaseTime is how long a claimed delivery is a dispatcher's: it outlives
// the longest attempt (10 s) by far, so that only a dead dispatcher's
// deliveries are ever taken over.
const leaseTime = time.Minute

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
}

// NewDispatcher returns a dispatcher; Run starts it.
func NewDispatcher(o DispatcherOptions) *Dispatcher {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	host, _ := os.Hostname()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return &Dispatcher{
		o: o, owner: host + "/" + hex.EncodeToString(b),
		lease: leaseTime,
		wake:  make(chan struct{}, 1),
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
			claimed, err = d.o.Store.ClaimDue(ctx, d.owner, now, now.Add(d.lease), free)
			if err != nil && ctx.Err() == nil {
				d.o.Logger.Error("webhook outbox unreadable", "err", err)
			}
		}
		for _, c := range claimed {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
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
	res := d.o.Sender.Send(ctx, c.Webhook, c.Delivery, now)
	a := webhook.Attempt{
		At: now, ResponseTimeMs: int(res.Elapsed / time.Millisecond), ResponseBody: res.Body,
		Error: res.Err, OK: res.OK,
	}
	if res.Status != 0 {
		st := res.Status
		a.ResponseStatus = &st
	}
	if !res.OK && retry {
		a.Next = d.next(c.Delivery.Attempts+1, res.RetryAfter, now)
	}
	if err := d.o.Store.RecordAttempt(ctx, d.owner, c.Delivery.ID, a); err != nil {
		if errors.Is(err, webhook.ErrLeaseLost) {
			d.o.Logger.Info("webhook attempt not recorded: the delivery is another's now, or ended",
				"delivery", c.Delivery.ID)
			return
		}
		d.o.Logger.Error("webhook attempt not recorded; it will be made again when its lease ends",
			"delivery", c.Delivery.ID, "err", err)
		return
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
// schedule, the SSRF guard and the extra TLS roots.
func FromConfig(cfg *config.Config, st webhook.Store, log *slog.Logger) (*Dispatcher, error) {
	sender, err := NewSender(SenderOptions{AllowPrivate: cfg.WebhookAllowPriv, CAFile: cfg.WebhookCAFile})
	if err != nil {
		return nil, fmt.Errorf("invalid setting SHORTLINK_WEBHOOK_CA_FILE: %w", err)
	}
	d := NewDispatcher(DispatcherOptions{Store: st, Sender: sender, Schedule: cfg.WebhookRetries, Logger: log})
	if cfg.WebhookLease > 0 {
		d.lease = cfg.WebhookLease // SHORTLINK_WEBHOOK_LEASE: tests shorten it
	}
	return d, nil
}
