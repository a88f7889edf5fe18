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
