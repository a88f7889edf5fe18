package events

import (
	"context"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/click"
	"shortlink.dev/shared/webhook"
)

// fakeOutbox is an Outbox in memory: subscriptions by workspace, a webhook
// generation, and the messages enqueued.
type fakeOutbox struct {
	mu    sync.Mutex
	subs  map[string][]string
	gen   int64
	reads int // WebhookEvents calls
	msgs  []webhook.Message
}

func (f *fakeOutbox) EnqueueMessages(_ context.Context, msgs []webhook.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, msgs...)
	return nil
}

func (f *fakeOutbox) WebhookEvents(_ context.Context, workspaceIDs []string) (map[string][]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	out := map[string][]string{}
	for _, ws := range workspaceIDs {
		if s, ok := f.subs[ws]; ok {
			out[ws] = s
		}
	}
	return out, nil
}

func (f *fakeOutbox) WebhookGeneration(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gen, nil
}

func (f *fakeOutbox) QRCodeLinks(context.Context, []string) (map[string]string, error) {
	return map[string]string{}, nil
}

// A webhook created while the workspace's "no webhooks" is cached receives
// the click of the next batch: its creation moved the generation, and no
// clock has to pass interestTTL first.
func TestEmitNoBlindWindow(t *testing.T) {
	ctx := context.Background()
	out := &fakeOutbox{subs: map[string][]string{}, gen: 7}
	e := New(out)
	frozen := time.Now()
	e.now = func() time.Time { return frozen } // the cache never expires by itself

	ev := func() click.Event {
		return click.Event{V: click.Version, ID: click.NewEventID(), Time: frozen, LinkID: "lnk_1",
			WorkspaceID: "ws_1", Domain: "sho.rt", Slug: "s", Target: "https://example.com/", Trigger: click.TriggerLink}
	}
	// Two batches without webhooks: the second uses the cached "none".
	for range 2 {
		if err := e.Emit(ctx, []click.Event{ev()}); err != nil {
			t.Fatal(err)
		}
	}
	if out.reads != 1 || len(out.msgs) != 0 {
		t.Fatalf("without webhooks: %d subscription reads, %d messages; want 1 and 0", out.reads, len(out.msgs))
	}

	// A webhook appears, and its transaction moves the generation.
	out.mu.Lock()
	out.subs["ws_1"] = []string{webhook.EventClick}
	out.gen++
	out.mu.Unlock()
	c := ev()
	if err := e.Emit(ctx, []click.Event{c}); err != nil {
		t.Fatal(err)
	}
	if len(out.msgs) != 1 || out.msgs[0].Event != webhook.EventClick || out.msgs[0].WorkspaceID != "ws_1" {
		t.Fatalf("the click made after the webhook's creation: %d messages %+v, want its click message", len(out.msgs), out.msgs)
	}

	// The generation stays: the subscriptions stay cached.
	reads := out.reads
	if err := e.Emit(ctx, []click.Event{ev()}); err != nil {
		t.Fatal(err)
	}
	if out.reads != reads || len(out.msgs) != 2 {
		t.Fatalf("same generation: %d more subscription reads, %d messages; want 0 and 2", out.reads-reads, len(out.msgs))
	}

	// Deleted (the generation moves again): no message.
	out.mu.Lock()
	delete(out.subs, "ws_1")
	out.gen++
	out.mu.Unlock()
	if err := e.Emit(ctx, []click.Event{ev()}); err != nil {
		t.Fatal(err)
	}
	if len(out.msgs) != 2 {
		t.Fatalf("after the webhook's deletion: %d messages, want 2", len(out.msgs))
	}
}
