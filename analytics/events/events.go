// Package events turns the clicks the analytics plane stores into webhook
// messages: click for every human click, qr.scanned for every human scan of
// a dynamic QR code on its own link. Messages go to the control plane's
// outbox (its SQLite file, or PostgreSQL in the split deployment) only for
// workspaces with an active webhook that subscribes to them, so a workspace
// without webhooks costs the click pipeline one cached lookup per batch.
//
// The cached subscriptions are used only while the webhook generation (a
// counter the store moves in the transaction of every webhook change) is
// the one they were read at: a webhook receives every click made after its
// creation answered, as the batch of such a click is emitted after that.
package events

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/webhook"
)

// Outbox is where the messages go, and what says which workspaces want
// them: *sqlstore.Store.
type Outbox interface {
	EnqueueMessages(ctx context.Context, msgs []webhook.Message) error
	WebhookEvents(ctx context.Context, workspaceIDs []string) (map[string][]string, error)
	// WebhookGeneration returns a counter that moves with every committed
	// webhook change: subscriptions read after it returned g reflect every
	// change up to g.
	WebhookGeneration(ctx context.Context) (int64, error)
	// QRCodeLinks returns the link of each dynamic QR code among ids.
	QRCodeLinks(ctx context.Context, ids []string) (map[string]string, error)
}

// interestTTL is how long a workspace's subscriptions are cached at most,
// even while the webhook generation stays: it bounds what a change that does
// not move the generation (a deleted workspace's webhooks, gone with it)
// costs. A change of a webhook moves the generation and is seen by the next
// batch, whatever this is.
const interestTTL = 2 * time.Second

// Emitter enqueues the webhook messages of stored clicks.
type Emitter struct {
	outbox Outbox
	now    func() time.Time

	mu        sync.Mutex
	interests map[string]interest
	gen       int64 // the newest webhook generation seen
}

type interest struct {
	click, qr bool
	until     time.Time
	// gen is the webhook generation read before the subscriptions were.
	gen int64
}

// New returns an emitter writing to outbox.
func New(outbox Outbox) *Emitter {
	return &Emitter{outbox: outbox, now: time.Now, interests: map[string]interest{}}
}

// clickData is the data of the click event (spec §6).
type clickData struct {
	LinkID         string `json:"linkId"`
	Slug           string `json:"slug"`
	Domain         string `json:"domain"`
	DestinationURL string `json:"destinationUrl"`
	Country        string `json:"country"`
	City           string `json:"city"`
	Device         string `json:"device"`
	Browser        string `json:"browser"`
	OS             string `json:"os"`
	Referrer       string `json:"referrer"`
}

// scanData is the data of the qr.scanned event (CONTRACT §9).
type scanData struct {
	QRID     string `json:"qrId"`
	LinkID   string `json:"linkId"`
	Slug     string `json:"slug"`
	Domain   string `json:"domain"`
	Country  string `json:"country"`
	City     string `json:"city"`
	Device   string `json:"device"`
	Browser  string `json:"browser"`
	OS       string `json:"os"`
	Referrer string `json:"referrer"`
}

// Emit enqueues the messages of a stored batch. Call it after the batch is
// stored and before it is acknowledged: a batch delivered again emits again,
// and as a message's id comes from its click's event id, the outbox keeps
// one delivery of it per webhook.
//
// A batch costs one single-row read of the webhook generation, one read of
// the subscriptions of its workspaces not cached at that generation (none
// while no webhook changes), and, when some workspace wants its clicks, the
// outbox write.
func (e *Emitter) Emit(ctx context.Context, batch []click.Event) error {
	want, err := e.interested(ctx, batch)
	if err != nil || len(want) == 0 {
		return err
	}
	var qrIDs []string
	for i := range batch {
		ev := &batch[i]
		if !ev.Bot && ev.QRID != "" && want[ev.WorkspaceID].qr {
			qrIDs = append(qrIDs, ev.QRID)
		}
	}
	codeLinks := map[string]string{}
	if len(qrIDs) > 0 {
		if codeLinks, err = e.outbox.QRCodeLinks(ctx, qrIDs); err != nil {
			return fmt.Errorf("cannot read the scanned QR codes: %w", err)
		}
	}
	var msgs []webhook.Message
	for i := range batch {
		ev := &batch[i]
		in := want[ev.WorkspaceID]
		if ev.Bot {
			continue
		}
		if in.click {
			m, err := message(ev, "c", webhook.EventClick, clickData{LinkID: ev.LinkID, Slug: ev.Slug, Domain: ev.Domain,
				DestinationURL: ev.Target, Country: ev.Country, City: ev.City, Device: ev.Device, Browser: ev.Browser,
				OS: ev.OS, Referrer: ev.Referrer})
			if err != nil {
				return err
			}
			msgs = append(msgs, m)
		}
		if in.qr && ev.QRID != "" && codeLinks[ev.QRID] == ev.LinkID {
			m, err := message(ev, "q", webhook.EventQRScanned, scanData{QRID: ev.QRID, LinkID: ev.LinkID, Slug: ev.Slug,
				Domain: ev.Domain, Country: ev.Country, City: ev.City, Device: ev.Device, Browser: ev.Browser,
				OS: ev.OS, Referrer: ev.Referrer})
			if err != nil {
				return err
			}
			msgs = append(msgs, m)
		}
	}
	if err := e.outbox.EnqueueMessages(ctx, msgs); err != nil {
		return fmt.Errorf("cannot enqueue %d webhook messages: %w", len(msgs), err)
	}
	return nil
}

// message makes the message of an event of a click, with an id that the
// click's event id and the kind decide.
func message(ev *click.Event, kind, event string, data any) (webhook.Message, error) {
	m, err := webhook.NewMessage(ev.WorkspaceID, event, data, ev.Time)
	if err != nil {
		return m, err
	}
	m.ID = "msg_" + kind + hex.EncodeToString(ev.ID[:])
	return m, nil
}

// interested returns the workspaces of the batch that want click or
// qr.scanned messages, from the cache or one query for the others.
func (e *Emitter) interested(ctx context.Context, batch []click.Event) (map[string]interest, error) {
	// Read before the subscriptions: a change committed between the two
	// reads moves the generation past gen, and the next batch reads again.
	gen, err := e.outbox.WebhookGeneration(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot read the webhook generation: %w", err)
	}
	now := e.now()
	out := map[string]interest{}
	var ask []string
	e.mu.Lock()
	if gen > e.gen { // every cached entry is older: drop them all
		clear(e.interests)
		e.gen = gen
	}
	for i := range batch {
		ws := batch[i].WorkspaceID
		if _, seen := out[ws]; seen {
			continue
		}
		in, ok := e.interests[ws]
		if !ok || in.gen != gen || now.After(in.until) {
			if !slices.Contains(ask, ws) {
				ask = append(ask, ws)
			}
			continue
		}
		out[ws] = in
	}
	e.mu.Unlock()
	if len(ask) > 0 {
		subs, err := e.outbox.WebhookEvents(ctx, ask)
		if err != nil {
			return nil, fmt.Errorf("cannot read webhook subscriptions: %w", err)
		}
		e.mu.Lock()
		if len(e.interests) > 100_000 {
			e.interests = map[string]interest{}
		}
		for _, ws := range ask {
			in := interest{until: now.Add(interestTTL), gen: gen}
			for _, ev := range subs[ws] {
				in.click = in.click || ev == webhook.All || ev == webhook.EventClick
				in.qr = in.qr || ev == webhook.All || ev == webhook.EventQRScanned
			}
			e.interests[ws] = in
			out[ws] = in
		}
		e.mu.Unlock()
	}
	for ws, in := range out {
		if !in.click && !in.qr {
			delete(out, ws)
		}
	}
	return out, nil
}
