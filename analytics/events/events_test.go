package events_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"shortlink.dev/analytics/events"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/storetest"
	"shortlink.dev/shared/webhook"
)

func TestEmit(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "shortlink.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ws, quiet := storetest.MustCreateWorkspace(t, st), storetest.MustCreateWorkspace(t, st)
	dom := storetest.UniqueDomain()
	l := storetest.MustCreateLink(t, st, storetest.NewLink(ws.ID, dom, "a"), -1)
	other := storetest.MustCreateLink(t, st, storetest.NewLink(ws.ID, dom, "b"), -1)
	qr := storetest.MustCreateDynamicQRCode(t, st, ws.ID, l.ID)
	otherQR := storetest.MustCreateDynamicQRCode(t, st, ws.ID, other.ID)
	clicks := storetest.MustCreateWebhook(t, st, storetest.NewWebhook(ws.ID, webhook.EventClick))
	scans := storetest.MustCreateWebhook(t, st, storetest.NewWebhook(ws.ID, webhook.EventQRScanned))
	ql := storetest.MustCreateLink(t, st, storetest.NewLink(quiet.ID, dom, "q"), -1)

	ev := func(linkID, workspaceID, qrID string, bot bool) click.Event {
		return click.Event{V: click.Version, ID: click.NewEventID(), Time: time.Now(), LinkID: linkID,
			WorkspaceID: workspaceID, Domain: dom, Slug: "a", Target: "https://example.com/", Country: "DE",
			Trigger: click.TriggerLink, QRID: qrID, Bot: bot}
	}
	human, bot := ev(l.ID, ws.ID, "", false), ev(l.ID, ws.ID, "", true)
	scan, foreignScan := ev(l.ID, ws.ID, qr, false), ev(l.ID, ws.ID, otherQR, false)
	batch := []click.Event{human, bot, scan, foreignScan, ev(ql.ID, quiet.ID, "", false)}

	e := events.New(st)
	for range 2 { // the bus may deliver a batch twice
		if err := e.Emit(ctx, batch); err != nil {
			t.Fatalf("emit: %v", err)
		}
	}
	count := func(w *webhook.Webhook) []*webhook.Delivery {
		list, _, err := st.ListDeliveries(ctx, webhook.Filter{WorkspaceID: ws.ID, WebhookID: w.ID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return list
	}
	// Humans only, each once: the human click and both scans are clicks.
	if got := count(clicks); len(got) != 3 {
		t.Fatalf("click deliveries: %d, want 3", len(got))
	}
	// A scan counts only for the code of its own link.
	got := count(scans)
	if len(got) != 1 || got[0].Event != webhook.EventQRScanned {
		t.Fatalf("qr.scanned deliveries: %d, want 1", len(got))
	}
	if want := `"qrId":"` + qr + `"`; !strings.Contains(string(got[0].Payload), want) {
		t.Fatalf("qr.scanned payload %s lacks %s", got[0].Payload, want)
	}
}

// BenchmarkEmit measures what the emitter adds to a stored batch of 500
// clicks: for workspaces without webhooks (the common case: one single-row
// read of the webhook generation, about 20 µs on SQLite, and one cached
// lookup) and for a workspace whose webhook takes every click (500 messages
// into the outbox, the same SQLite file the click store writes).
func BenchmarkEmit(b *testing.B) {
	ctx := context.Background()
	st, err := sqlstore.OpenSQLite(ctx, filepath.Join(b.TempDir(), "shortlink.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	batch := func(workspaceID, linkID string) []click.Event {
		out := make([]click.Event, 500)
		for i := range out {
			out[i] = click.Event{V: click.Version, ID: click.NewEventID(), Time: time.Now(), LinkID: linkID,
				WorkspaceID: workspaceID, Domain: "sho.rt", Slug: "s", Target: "https://example.com/", Trigger: click.TriggerLink}
		}
		return out
	}
	for _, c := range []struct {
		name     string
		webhooks bool
	}{{"NoWebhooks", false}, {"ClickWebhook", true}} {
		b.Run(c.name, func(b *testing.B) {
			ws := storetest.MustCreateWorkspace(b, st)
			l := storetest.MustCreateLink(b, st, storetest.NewLink(ws.ID, storetest.UniqueDomain(), "s"), -1)
			if c.webhooks {
				storetest.MustCreateWebhook(b, st, storetest.NewWebhook(ws.ID, webhook.EventClick))
			}
			e := events.New(st)
			for b.Loop() {
				b.StopTimer()
				clicks := batch(ws.ID, l.ID)
				b.StartTimer()
				if err := e.Emit(ctx, clicks); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*500), "ns/click")
		})
	}
}
