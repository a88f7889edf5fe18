package e2e

// Webhooks over real HTTP and real TLS (CONTRACT §9, spec §2.6, §4.6, §6):
// their CRUD, validation and permissions; the events a workspace's changes,
// clicks and scans send, signed twice, to an HTTPS receiver that checks
// them (webhook_receiver_test.go); retries, the disabling after 10 failures
// and re-enabling; secret rotation; the test event; and deliveries that
// survive a server killed in the middle of their retries.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"shortlink.dev/api"
)

// fastRetries is the retry schedule of the tests: 5 retries, 300 ms apart.
const fastRetries = "300ms,300ms,300ms,300ms,300ms"

// webhookFields are the members of a webhook; create and rotate-secret add secret.
var webhookFields = []string{"id", "name", "url", "events", "isActive", "consecutiveFailures", "createdAt", "updatedAt"}

// deliveryFields are the members of a delivery (CONTRACT §9, docs/api.md).
var deliveryFields = []string{"id", "messageId", "event", "status", "attempts", "payload", "responseStatus", "responseTimeMs",
	"responseBody", "error", "createdAt", "lastAttemptAt", "nextAttemptAt"}

var (
	webhookIDRE  = regexp.MustCompile(`^wh_[A-Za-z0-9_-]+$`)
	deliveryIDRE = regexp.MustCompile(`^dlv_[A-Za-z0-9_-]+$`)
	secretRE     = regexp.MustCompile(`^whsec_[A-Za-z0-9+/=]+$`)
)

// Webhook is a webhook as the API answers it; Secret is set only by create
// and rotate-secret.
type Webhook = api.Webhook

// Delivery is a delivery of a message to a webhook.
type Delivery = api.Delivery

func TestWebhooks(t *testing.T) {
	needBinary(t)
	t.Parallel()
	rc := newHookReceiver(t)
	// Loopback is Berlin, X-Forwarded-For from loopback is believed: the
	// clicks' events carry a country and a city.
	geo := writeGeoDB(t, t.TempDir())
	zone := startTXTZone(t) // domains are verified against it (domains_test.go)
	tg := newTarget(t, append(rc.settings(fastRetries), "SHORTLINK_DNS_RESOLVER="+zone.Addr,
		"SHORTLINK_GEOIP_DB="+geo, "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")...)

	t.Run("CRUD", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		hook := func(path string, body obj) Webhook {
			t.Helper()
			body["url"] = rc.route(t, path, always(http.StatusOK))
			h := tg.createWebhook(t, w.Key, body)
			rc.setSecret(path, h.Secret)
			return h
		}
		before := time.Now().UTC().Add(-time.Second)
		a := hook("crud/a", obj{"name": "Orders", "events": []string{"link.created", "click"}})
		after := time.Now().UTC().Add(time.Second)
		wantWebhook(t, a, Webhook{ID: a.ID, Name: "Orders", URL: rc.srv.URL + "/crud/a", Events: []string{"link.created", "click"}, IsActive: true})
		if at := wantTime(t, "createdAt", a.CreatedAt); at.Before(before) || at.After(after) || a.UpdatedAt != a.CreatedAt {
			t.Errorf("a new webhook: createdAt %s updatedAt %s, want both now", a.CreatedAt, a.UpdatedAt)
		}
		time.Sleep(2 * time.Millisecond)
		b := hook("crud/b", obj{"name": "Everything", "events": []string{"*"}})
		wantWebhook(t, b, Webhook{ID: b.ID, Name: "Everything", URL: rc.srv.URL + "/crud/b", Events: []string{"*"}, IsActive: true})
		time.Sleep(2 * time.Millisecond)
		every := []string{"click", "link.created", "link.updated", "link.deleted", "domain.verified", "qr.scanned"}
		c := hook("crud/c", obj{"name": "Each event", "events": every})
		wantWebhook(t, c, Webhook{ID: c.ID, Name: "Each event", URL: rc.srv.URL + "/crud/c", Events: every, IsActive: true})
		if a.Secret == b.Secret || b.Secret == c.Secret || a.ID == b.ID {
			t.Errorf("two webhooks share an id or a secret: %s %s, %s %s", a.ID, a.Secret, b.ID, b.Secret)
		}

		t.Run("Validation", func(t *testing.T) {
			u := rc.srv.URL + "/crud/never"
			for _, tc := range []struct {
				name  string
				body  any
				field string
			}{
				{"HTTP", obj{"name": "n", "url": "http://hooks.example.com/in", "events": []string{"*"}}, "url"},
				{"NoScheme", obj{"name": "n", "url": "hooks.example.com/in", "events": []string{"*"}}, "url"},
				{"FTP", obj{"name": "n", "url": "ftp://hooks.example.com/in", "events": []string{"*"}}, "url"},
				{"NoHost", obj{"name": "n", "url": "https:///in", "events": []string{"*"}}, "url"},
				{"NoURL", obj{"name": "n", "events": []string{"*"}}, "url"},
				{"NoName", obj{"url": u, "events": []string{"*"}}, "name"},
				{"EmptyName", obj{"name": "", "url": u, "events": []string{"*"}}, "name"},
				{"NoEvents", obj{"name": "n", "url": u}, "events"},
				{"EmptyEvents", obj{"name": "n", "url": u, "events": []string{}}, "events"},
				{"UnknownEvent", obj{"name": "n", "url": u, "events": []string{"link.created", "link.clicked"}}, "events"},
				// "test" is what POST /webhooks/:id/test sends, not an event of spec §6.
				{"TestEvent", obj{"name": "n", "url": u, "events": []string{"test"}}, "events"},
				{"EventsNotAList", obj{"name": "n", "url": u, "events": "click"}, "events"},
				{"UnknownField", obj{"name": "n", "url": u, "events": []string{"*"}, "retries": 3}, "retries"},
				{"Malformed", `{"name":`, "body"},
				// docs/api.md: names of 1–200 characters, urls of at most 2048.
				{"LongName", obj{"name": strings.Repeat("n", 201), "url": u, "events": []string{"*"}}, "name"},
				{"LongURL", obj{"name": "n", "url": "https://hooks.example.com/" + strings.Repeat("p", 2048), "events": []string{"*"}}, "url"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := tg.API(t, w.Key, "POST", "/webhooks", tc.body)
					r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, tc.field)
				})
			}
			for _, tc := range []struct {
				body  obj
				field string
			}{
				{obj{"url": "http://hooks.example.com/in"}, "url"},
				{obj{"url": nil}, "url"},
				{obj{"name": ""}, "name"},
				{obj{"events": []string{}}, "events"},
				{obj{"events": []string{"nope"}}, "events"},
				{obj{"isActive": "yes"}, "isActive"},
				{obj{"secret": "whsec_mine"}, "secret"},
			} {
				r := tg.API(t, w.Key, "PATCH", "/webhooks/"+c.ID, tc.body)
				r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, tc.field)
			}
			if got := tg.getWebhook(t, w.Key, c.ID); !sameJSON(got, withoutSecret(c)) {
				t.Errorf("refused PATCHes changed the webhook:\n%s\nwant\n%s", mustMarshal(t, got), mustMarshal(t, withoutSecret(c)))
			}
		})

		t.Run("List", func(t *testing.T) {
			// Oldest first, without secrets.
			want := []Webhook{withoutSecret(a), withoutSecret(b), withoutSecret(c)}
			var seen []Webhook
			for page := 1; page <= 2; page++ {
				list, meta := tg.listWebhooks(t, w.Key, fmt.Sprintf("?perPage=2&page=%d", page))
				seen = append(seen, list...)
				if m := (Meta{page, 2, 3, page == 1}); meta != m {
					t.Errorf("GET /webhooks?perPage=2&page=%d: meta %+v, want %+v", page, meta, m)
				}
			}
			if !sameJSON(seen, want) {
				t.Errorf("GET /webhooks pages:\n%s\nwant, oldest first:\n%s", mustMarshal(t, seen), mustMarshal(t, want))
			}
			for _, q := range []string{"perPage=101", "perPage=0", "page=0"} {
				tg.API(t, w.Key, "GET", "/webhooks?"+q, nil).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
			}
		})

		t.Run("GetPatchDelete", func(t *testing.T) {
			if got := tg.getWebhook(t, w.Key, a.ID); !sameJSON(got, withoutSecret(a)) {
				t.Errorf("GET /webhooks/%s:\n%s\nwant the webhook as created, without its secret:\n%s", a.ID, mustMarshal(t, got), mustMarshal(t, withoutSecret(a)))
			}
			time.Sleep(2 * time.Millisecond)
			u := rc.route(t, "crud/a2", always(http.StatusOK))
			rc.setSecret("crud/a2", a.Secret)
			p := tg.patchWebhook(t, w.Key, a.ID, obj{"name": "Orders v2", "url": u, "events": []string{"link.deleted"}})
			want := withoutSecret(a)
			want.Name, want.URL, want.Events, want.UpdatedAt = "Orders v2", u, []string{"link.deleted"}, p.UpdatedAt
			wantWebhook(t, p, want)
			if !wantTime(t, "updatedAt", p.UpdatedAt).After(wantTime(t, "createdAt", p.CreatedAt)) {
				t.Errorf("after a PATCH: updatedAt %s, want later than createdAt %s", p.UpdatedAt, p.CreatedAt)
			}
			if got := tg.getWebhook(t, w.Key, a.ID); !sameJSON(got, p) {
				t.Errorf("GET after PATCH:\n%s\nwant\n%s", mustMarshal(t, got), mustMarshal(t, p))
			}
			// isActive switches it off and on.
			if off := tg.patchWebhook(t, w.Key, a.ID, obj{"isActive": false}); off.IsActive {
				t.Errorf("PATCH isActive false: isActive %v", off.IsActive)
			}
			if on := tg.patchWebhook(t, w.Key, a.ID, obj{"isActive": true}); !on.IsActive || on.ConsecutiveFailures != 0 {
				t.Errorf("PATCH isActive true: isActive %v consecutiveFailures %d, want true and 0", on.IsActive, on.ConsecutiveFailures)
			}

			tg.API(t, w.Key, "DELETE", "/webhooks/"+b.ID, nil).wantNoContent(t)
			for _, rq := range []struct {
				method, path string
				body         any
			}{
				{"GET", "/webhooks/" + b.ID, nil},
				{"PATCH", "/webhooks/" + b.ID, obj{"name": "x"}},
				{"DELETE", "/webhooks/" + b.ID, nil},
				{"POST", "/webhooks/" + b.ID + "/test", nil},
				{"POST", "/webhooks/" + b.ID + "/rotate-secret", nil},
				{"GET", "/webhooks/" + b.ID + "/deliveries", nil},
				{"GET", "/webhooks/wh_doesnotexist", nil},
			} {
				tg.API(t, w.Key, rq.method, rq.path, rq.body).wantError(t, http.StatusNotFound, "NOT_FOUND")
			}
			if list, meta := tg.listWebhooks(t, w.Key, ""); meta.Total != 2 || slices.ContainsFunc(list, func(h Webhook) bool { return h.ID == b.ID }) {
				t.Errorf("after the DELETE: GET /webhooks lists %d (total %d), want 2 without %s", len(list), meta.Total, b.ID)
			}
			if u := tg.usage(t, w.Key); u.Webhooks != 2 {
				t.Errorf("GET /usage: webhooks %d, want 2", u.Webhooks)
			}
		})

		t.Run("RotateSecret", func(t *testing.T) {
			r := tg.API(t, w.Key, "POST", "/webhooks/"+c.ID+"/rotate-secret", nil).wantSuccess(t, http.StatusOK)
			rotated := webhookFromMap(t, r, r.DataMap(t), true)
			if rotated.Secret == c.Secret {
				t.Fatalf("rotate-secret answered the old secret")
			}
			want := c
			want.Secret, want.UpdatedAt = rotated.Secret, rotated.UpdatedAt
			wantWebhook(t, rotated, want)
			rc.setSecret("crud/c", rotated.Secret)
			// The secret is not shown again.
			if got := tg.getWebhook(t, w.Key, c.ID); got.Secret != "" {
				t.Errorf("GET after rotate-secret shows the secret")
			}
		})

		t.Run("Permissions", func(t *testing.T) {
			read := tg.NewKey(t, w.ID, "webhooks:read")
			tg.listWebhooks(t, read.Key, "")
			tg.getWebhook(t, read.Key, c.ID)
			tg.deliveries(t, read.Key, c.ID, "")
			write := tg.NewKey(t, w.ID, "webhooks:write")
			made := tg.createWebhook(t, write.Key, obj{"name": "by a writer", "url": rc.srv.URL + "/crud/never", "events": []string{"link.created"}})
			tg.API(t, write.Key, "DELETE", "/webhooks/"+made.ID, nil).wantNoContent(t)
			tg.API(t, write.Key, "GET", "/webhooks", nil).wantError(t, http.StatusForbidden, "FORBIDDEN")
			none := tg.NewKey(t, w.ID, "links:read", "links:write", "analytics:read")
			other := tg.NewWorkspace(t, "enterprise")
			for _, rq := range []struct {
				method, path string
				body         any
			}{
				{"GET", "/webhooks", nil},
				{"POST", "/webhooks", obj{"name": "n", "url": rc.srv.URL + "/crud/never", "events": []string{"*"}}},
				{"GET", "/webhooks/" + c.ID, nil},
				{"PATCH", "/webhooks/" + c.ID, obj{"name": "taken over"}},
				{"DELETE", "/webhooks/" + c.ID, nil},
				{"POST", "/webhooks/" + c.ID + "/test", nil},
				{"POST", "/webhooks/" + c.ID + "/rotate-secret", nil},
				{"GET", "/webhooks/" + c.ID + "/deliveries", nil},
			} {
				if rq.method != "GET" {
					tg.API(t, read.Key, rq.method, rq.path, rq.body).wantError(t, http.StatusForbidden, "FORBIDDEN")
				}
				tg.API(t, none.Key, rq.method, rq.path, rq.body).wantError(t, http.StatusForbidden, "FORBIDDEN")
				tg.API(t, "", rq.method, rq.path, rq.body).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
				if strings.HasPrefix(rq.path, "/webhooks/") {
					tg.API(t, other.Key, rq.method, rq.path, rq.body).wantError(t, http.StatusNotFound, "NOT_FOUND")
				}
			}
			if list, _ := tg.listWebhooks(t, other.Key, ""); len(list) != 0 {
				t.Errorf("another workspace lists %d webhooks, want none", len(list))
			}
			if got := tg.getWebhook(t, w.Key, c.ID); got.Name != c.Name || !got.IsActive {
				t.Errorf("refused requests changed the webhook: %+v", got)
			}
		})

		// Nothing of the above is an event: no webhook got anything.
		for _, p := range []string{"crud/a", "crud/a2", "crud/b", "crud/c", "crud/never"} {
			if reqs := rc.requests(p); len(reqs) != 0 {
				t.Errorf("receiver /%s got %s; nothing happened that a webhook subscribes to", p, describeRequests(reqs))
			}
		}
	})

	t.Run("InternalAddressesRefused", func(t *testing.T) {
		t.Parallel()
		// SHORTLINK_WEBHOOK_ALLOW_PRIVATE is off by default. The receiver's
		// certificate is trusted, so only the guard stands between them.
		strict := newTarget(t, "SHORTLINK_WEBHOOK_CA_FILE="+rc.caFile)
		w := strict.NewWorkspace(t, "enterprise")
		for _, u := range []string{
			rc.srv.URL + "/strict/literal", "https://127.0.0.1/hook", "https://localhost/hook", "https://10.1.2.3/hook",
			"https://192.168.0.10/hook", "https://172.16.5.4/hook", "https://169.254.169.254/latest/meta-data",
			"https://[::1]/hook", "https://[fd00::1]/hook", "https://0.0.0.0/hook",
		} {
			r := strict.API(t, w.Key, "POST", "/webhooks", obj{"name": "internal", "url": u, "events": []string{"*"}})
			r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR").wantField(t, r, "url")
		}
		strict.createWebhook(t, w.Key, obj{"name": "public", "url": "https://hooks.example.com/shortlink", "events": []string{"*"}})

		// A name that resolves to loopback (this machine's name, usually,
		// in /etc/hosts) is refused when an attempt dials it.
		host := loopbackName(t)
		if host == "" {
			return
		}
		_, port, err := net.SplitHostPort(rc.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		u := "https://" + host + ":" + port + "/strict/by-name"
		rc.route(t, "strict/by-name", always(http.StatusOK))
		r := strict.API(t, w.Key, "POST", "/webhooks", obj{"name": "by name", "url": u, "events": []string{"link.created"}})
		if r.Status == http.StatusBadRequest {
			t.Logf("%s: refused when saved", r)
			return
		}
		h := webhookFromMap(t, r.wantSuccess(t, http.StatusCreated), r.DataMap(t), true)
		rc.setSecret("strict/by-name", h.Secret)
		r = strict.API(t, w.Key, "POST", "/webhooks/"+h.ID+"/test", nil).wantSuccess(t, http.StatusOK)
		d := deliveryFromMap(t, r, r.DataMap(t))
		if d.Status == "success" || d.ResponseStatus != nil || d.Error == nil || d.Attempts != 1 {
			t.Errorf("test event to %s (loopback): %s; want a failed attempt with no response and an error", u, mustMarshal(t, d))
		}
		t.Logf("the attempt to %s: error %q", u, deref(d.Error))
		if n := rc.handshakes(host); n != 0 {
			t.Errorf("the receiver saw %d TLS handshakes for %s: a loopback address was dialled", n, host)
		}
		if reqs := rc.requests("strict/by-name"); len(reqs) != 0 {
			t.Errorf("the receiver got %s", describeRequests(reqs))
		}
	})

	t.Run("Events", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		key := tg.NewKey(t, w.ID, "all") // its id is link.created's createdBy
		hook := func(path string, events ...string) Webhook {
			t.Helper()
			h := tg.createWebhook(t, key.Key, obj{"name": path, "url": rc.route(t, path, always(http.StatusOK)), "events": events})
			rc.setSecret(path, h.Secret)
			return h
		}
		hook("events/all", "*")
		hook("events/created", "link.created")
		hook("events/clicks", "click")
		hook("events/scans-and-deletes", "qr.scanned", "link.deleted")

		start := time.Now().UTC().Add(-time.Second)
		l := tg.createLink(t, key.Key, obj{"destinationUrl": "https://example.com/launch", "slug": "launch-" + randomSlug()})
		updated := decodeLink(t, tg.API(t, key.Key, "PATCH", "/links/"+l.ID, obj{"title": "Launch", "tags": []string{"spring"}}).wantSuccess(t, http.StatusOK))
		// Changes that are refused are no events.
		tg.API(t, key.Key, "POST", "/links", obj{"destinationUrl": "https://example.com/again", "slug": l.Slug}).wantError(t, http.StatusConflict, "SLUG_EXISTS")
		tg.API(t, key.Key, "PATCH", "/links/"+l.ID, obj{"destinationUrl": "ftp://example.com/"}).wantError(t, http.StatusBadRequest, "INVALID_URL")
		code := tg.createQR(t, key.Key, obj{"name": "Poster", "linkId": l.ID})

		// A visitor from London, a crawler, and a scan of the poster in Linköping.
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, ua(uaWindowsChrome, "X-Forwarded-For", "81.2.69.1",
			"Referer", "https://news.example.com/launch?utm=x"), nil), l.DestinationURL)
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, ua(botAgents["Googlebot"], "X-Forwarded-For", "216.160.83.56"), nil), l.DestinationURL)
		wantRedirect(t, tg.Edge(t, "GET", l.Slug+"?qr="+code.ID, ua(uaMacSafari, "X-Forwarded-For", "89.160.20.1"), nil), l.DestinationURL)
		tg.awaitClicks(t, key.Key, l.ID, 2)
		tg.API(t, key.Key, "DELETE", "/links/"+l.ID, nil).wantNoContent(t)
		deleted := tg.getLink(t, key.Key, l.ID)
		end := time.Now().UTC().Add(time.Second)

		wait := pipelineWait + 20*time.Second
		for path, n := range map[string]int{"events/all": 6, "events/created": 1, "events/clicks": 2, "events/scans-and-deletes": 2} {
			rc.await(t, path, fmt.Sprintf("%d messages", n), wait, func(r []hookRequest) bool { return len(countIDs(r)) >= n })
		}
		// Anything more (the crawler's click, an event a webhook did not
		// subscribe to, a second delivery) has had time to come.
		time.Sleep(2 * time.Second)
		for path, want := range map[string]map[string]int{
			"events/all":               {"link.created": 1, "link.updated": 1, "click": 2, "qr.scanned": 1, "link.deleted": 1},
			"events/created":           {"link.created": 1},
			"events/clicks":            {"click": 2},
			"events/scans-and-deletes": {"qr.scanned": 1, "link.deleted": 1},
		} {
			reqs := rc.requests(path)
			got := map[string]int{}
			for _, r := range reqs {
				got[r.Event]++
			}
			if !sameJSON(got, want) {
				t.Errorf("receiver /%s got events %v, want %v: %s", path, got, want, describeRequests(reqs))
			}
			for id, n := range countIDs(reqs) {
				if n != 1 {
					t.Errorf("receiver /%s got message %s %d times", path, id, n)
				}
			}
			rc.wantClean(t, path)
		}
		all := rc.requests("events/all")
		// A message has one id, whichever webhook it goes to.
		for _, path := range []string{"events/created", "events/clicks", "events/scans-and-deletes"} {
			for _, r := range rc.requests(path) {
				if !slices.ContainsFunc(all, func(a hookRequest) bool { return a.ID == r.ID && a.Event == r.Event }) {
					t.Errorf("receiver /%s got %s %s, which /events/all did not get under that id", path, r.Event, r.ID)
				}
			}
		}

		byEvent := map[string][]hookPayload{}
		for _, r := range all {
			p := r.payload(t)
			if at := wantTime(t, r.Event+" timestamp", p.Timestamp); at.Before(start) || at.After(end) {
				t.Errorf("%s: timestamp %s, want between %s and %s", r.Event, p.Timestamp, start, end)
			}
			byEvent[r.Event] = append(byEvent[r.Event], p)
		}
		if len(byEvent["link.created"]) == 1 {
			wantStrings(t, "link.created data", byEvent["link.created"][0].Data, map[string]string{
				"id": l.ID, "slug": l.Slug, "domain": l.Domain, "destinationUrl": l.DestinationURL,
				"shortUrl": l.ShortURL, "createdBy": key.ID,
			})
		}
		if len(byEvent["link.updated"]) == 1 {
			wantLinkRecord(t, "link.updated data", byEvent["link.updated"][0].Data, updated)
		}
		if len(byEvent["link.deleted"]) == 1 {
			if !deleted.IsArchived {
				t.Errorf("GET after DELETE: isArchived false")
			}
			wantLinkRecord(t, "link.deleted data", byEvent["link.deleted"][0].Data, deleted)
		}
		if len(byEvent["qr.scanned"]) == 1 {
			wantStrings(t, "qr.scanned data", byEvent["qr.scanned"][0].Data, map[string]string{
				"qrId": code.ID, "linkId": l.ID, "slug": l.Slug, "domain": l.Domain, "country": "SE", "city": "Linköping",
				"device": "desktop", "browser": "Safari", "os": "macOS", "referrer": "",
			})
		}
		// The visit and the scan are both clicks; the crawler is none.
		if clicks := byEvent["click"]; len(clicks) == 2 {
			slices.SortFunc(clicks, func(a, b hookPayload) int {
				return strings.Compare(string(a.Data["browser"]), string(b.Data["browser"]))
			})
			click := map[string]string{"linkId": l.ID, "slug": l.Slug, "domain": l.Domain, "destinationUrl": l.DestinationURL}
			visit, scan := clone(click), clone(click)
			for k, v := range map[string]string{"country": "GB", "city": "London", "device": "desktop", "browser": "Chrome", "os": "Windows", "referrer": "news.example.com"} {
				visit[k] = v
			}
			for k, v := range map[string]string{"country": "SE", "city": "Linköping", "device": "desktop", "browser": "Safari", "os": "macOS", "referrer": ""} {
				scan[k] = v
			}
			wantStrings(t, "click data of the visit", clicks[0].Data, visit)
			wantStrings(t, "click data of the scan", clicks[1].Data, scan)
		}
	})

	t.Run("DomainVerified", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		const path = "domain-verified"
		u := rc.route(t, path, always(http.StatusOK))
		h := tg.createWebhook(t, w.Key, obj{"name": "domains", "url": u, "events": []string{"domain.verified"}})
		rc.setSecret(path, h.Secret)
		name := "hooks-" + randomSlug() + ".example.com"
		var d struct {
			ID           string  `json:"id"`
			Name         string  `json:"name"`
			Verified     bool    `json:"verified"`
			VerifiedAt   *string `json:"verifiedAt"`
			Verification struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"verification"`
		}
		tg.API(t, w.Key, "POST", "/domains", obj{"name": name}).wantSuccess(t, http.StatusCreated).Data(t, &d)
		// A verification that finds no record is no event; one that finds it is.
		zone.Set(d.Verification.Name, "shortlink-verify=wrong")
		tg.API(t, w.Key, "POST", "/domains/"+d.ID+"/verify", nil).wantSuccess(t, http.StatusOK).Data(t, &d)
		if d.Verified {
			t.Fatalf("verified with a wrong TXT record")
		}
		zone.Set(d.Verification.Name, d.Verification.Value)
		tg.API(t, w.Key, "POST", "/domains/"+d.ID+"/verify", nil).wantSuccess(t, http.StatusOK).Data(t, &d)
		if !d.Verified || d.VerifiedAt == nil {
			t.Fatalf("not verified with the right TXT record: %+v", d)
		}
		// Verified already: no second event.
		tg.API(t, w.Key, "POST", "/domains/"+d.ID+"/verify", nil).wantSuccess(t, http.StatusOK)
		// A link made meanwhile is no domain event.
		tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/domains"})

		rc.awaitN(t, path, 1, 20*time.Second)
		time.Sleep(1500 * time.Millisecond)
		reqs := rc.requests(path)
		if len(reqs) != 1 || reqs[0].Event != "domain.verified" {
			t.Fatalf("receiver got %s; want one domain.verified", describeRequests(reqs))
		}
		rc.wantClean(t, path)
		data := reqs[0].payload(t).Data
		wantExactKeys(t, "domain.verified data", data, "id", "name", "verifiedAt")
		var got struct{ ID, Name, VerifiedAt string }
		mustJSON(t, mustMarshal(t, data), &got)
		if got.ID != d.ID || got.Name != name || !wantTime(t, "verifiedAt", got.VerifiedAt).Equal(wantTime(t, "verifiedAt", *d.VerifiedAt)) {
			t.Errorf("domain.verified data %s; want id %s, name %s, verifiedAt %s", mustMarshal(t, data), d.ID, name, *d.VerifiedAt)
		}
	})

	t.Run("FailThenSucceed", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		const path = "retry/fail-3"
		// The 4th attempt succeeds, once the test has looked at the failures.
		gate := make(chan struct{})
		u := rc.route(t, path, func(n int) hookAnswer {
			if n <= 3 {
				return hookAnswer{status: http.StatusInternalServerError, body: "try later"}
			}
			return hookAnswer{status: http.StatusOK, body: "ok", hold: gate}
		})
		h := tg.createWebhook(t, w.Key, obj{"name": "flaky", "url": u, "events": []string{"link.created"}})
		rc.setSecret(path, h.Secret)
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/retry"})

		reqs := rc.awaitN(t, path, 4, 30*time.Second)
		mid := tg.getWebhook(t, w.Key, h.ID)
		if mid.ConsecutiveFailures != 3 || !mid.IsActive {
			t.Errorf("after 3 failed attempts: consecutiveFailures %d isActive %v, want 3 and true", mid.ConsecutiveFailures, mid.IsActive)
		}
		ds, _ := tg.deliveries(t, w.Key, h.ID, "")
		if len(ds) != 1 {
			t.Fatalf("deliveries: %s, want 1", mustMarshal(t, ds))
		}
		if d := ds[0]; d.Status != "pending" || d.Attempts != 3 || deref32(d.ResponseStatus) != 500 || deref(d.ResponseBody) != "try later" ||
			d.Error == nil || d.NextAttemptAt == nil || d.LastAttemptAt == nil || d.MessageID != reqs[0].ID || d.Event != "link.created" {
			t.Errorf("the delivery after 3 failed attempts: %s; want pending, 3 attempts, the 500 and its body, an error, a next attempt, messageId %s",
				mustMarshal(t, d), reqs[0].ID)
		}
		// The delivery shows the body every attempt sent, byte for byte: what the signature signs.
		if d := ds[0]; !bytes.Equal(d.Payload, reqs[0].Body) || !bytes.Equal(reqs[3].Body, reqs[0].Body) {
			t.Errorf("the delivery's payload %s; the receiver got %s", d.Payload, reqs[0].Body)
		}
		// Editing the webhook is no success: the count stays, in the answer as in the store.
		renamed := tg.patchWebhook(t, w.Key, h.ID, obj{"name": "flaky, renamed"})
		if got := tg.getWebhook(t, w.Key, h.ID); renamed.ConsecutiveFailures != 3 || !sameJSON(got, renamed) {
			t.Errorf("PATCH name after 3 failed attempts answered consecutiveFailures %d; GET then shows %d; want 3 in both:\n%s\n%s",
				renamed.ConsecutiveFailures, got.ConsecutiveFailures, mustMarshal(t, renamed), mustMarshal(t, got))
		}
		close(gate)
		d := tg.awaitDelivery(t, w.Key, h.ID, ds[0].ID, "to end", 15*time.Second, func(d Delivery) bool { return d.Status != "pending" })
		if d.Status != "success" || d.Attempts != 4 || deref32(d.ResponseStatus) != 200 || deref(d.ResponseBody) != "ok" ||
			d.Error != nil || d.NextAttemptAt != nil || d.ResponseTimeMs == nil {
			t.Errorf("the delivery: %s; want success after 4 attempts, status 200, body ok, no error, no next attempt", mustMarshal(t, d))
		}
		if got := tg.getWebhook(t, w.Key, h.ID); got.ConsecutiveFailures != 0 || !got.IsActive {
			t.Errorf("after the success: consecutiveFailures %d isActive %v, want 0 and true", got.ConsecutiveFailures, got.IsActive)
		}

		time.Sleep(1500 * time.Millisecond)
		reqs = rc.requests(path)
		if len(reqs) != 4 {
			t.Fatalf("receiver got %s; want exactly 4 attempts", describeRequests(reqs))
		}
		rc.wantClean(t, path)
		for i, r := range reqs {
			if r.ID != d.MessageID || r.Header.Get("webhook-id") != d.MessageID || string(r.Body) != string(reqs[0].Body) {
				t.Errorf("attempt %d: X-Webhook-ID %s webhook-id %s; want %s, and the same body as the first", i+1, r.ID, r.Header.Get("webhook-id"), d.MessageID)
			}
			if i == 0 {
				continue
			}
			// A retry is never early (the schedule's 300 ms, less the way
			// of a request on loopback), nor much late.
			gap := r.At.Sub(reqs[i-1].At)
			if gap < 250*time.Millisecond || gap > 5*time.Second {
				t.Errorf("attempt %d came %v after attempt %d; the schedule says 300 ms", i+1, gap, i)
			}
			t.Logf("attempt %d: %v after the previous one (the schedule: 300 ms)", i+1, gap.Round(time.Millisecond))
		}
		if dataID(reqs[0]) != l.ID {
			t.Errorf("the message is not the link's link.created: %s", reqs[0].Body)
		}
	})

	t.Run("TenFailuresDisable", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		const path = "disable/always-500"
		u := rc.route(t, path, always(http.StatusInternalServerError))
		h := tg.createWebhook(t, w.Key, obj{"name": "broken", "url": u, "events": []string{"link.created"}})
		rc.setSecret(path, h.Secret)
		// Two messages of 6 attempts each: the 10th failed attempt disables the webhook.
		first := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/disable/1"})
		second := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/disable/2"})
		off := tg.awaitWebhook(t, w.Key, h.ID, "to be disabled", 60*time.Second, func(h Webhook) bool { return !h.IsActive })
		if off.ConsecutiveFailures < 10 {
			t.Errorf("disabled with consecutiveFailures %d, want 10", off.ConsecutiveFailures)
		}
		t.Logf("disabled with consecutiveFailures %d", off.ConsecutiveFailures)
		ds, meta := tg.deliveries(t, w.Key, h.ID, "")
		if meta.Total != 2 || len(ds) != 2 {
			t.Fatalf("deliveries: %s; want 2", mustMarshal(t, ds))
		}
		attempts := 0
		for _, d := range ds {
			attempts += d.Attempts
			if d.Status != "failed" || d.NextAttemptAt != nil || deref32(d.ResponseStatus) != 500 || d.Error == nil || d.Attempts < 1 || d.Attempts > 6 {
				t.Errorf("a delivery of the disabled webhook: %s; want failed after 1 to 6 attempts, the 500, an error, no next attempt", mustMarshal(t, d))
			}
		}
		if attempts != off.ConsecutiveFailures {
			t.Errorf("the deliveries record %d attempts, the webhook %d consecutive failures", attempts, off.ConsecutiveFailures)
		}
		failed := rc.requests(path)
		if len(failed) < 10 || len(failed) > 12 {
			t.Errorf("the receiver got %s; want 10 to 12 attempts", describeRequests(failed))
		}
		ids := countIDs(failed)
		if len(ids) != 2 {
			t.Errorf("the failed attempts carry %d message ids, want 2: %v", len(ids), ids)
		}

		// Disabled: no attempt more, and a new link sends nothing.
		third := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/disable/3"})
		time.Sleep(3 * time.Second)
		if reqs := rc.requests(path); len(reqs) != len(failed) {
			t.Errorf("after the webhook was disabled the receiver got %d more requests: %s", len(reqs)-len(failed), describeRequests(reqs[len(failed):]))
		}
		if got := tg.getWebhook(t, w.Key, h.ID); got.IsActive || got.ConsecutiveFailures != off.ConsecutiveFailures {
			t.Errorf("while disabled: isActive %v consecutiveFailures %d, want false and %d", got.IsActive, got.ConsecutiveFailures, off.ConsecutiveFailures)
		}

		// Re-enabled: the count starts again and new events arrive.
		rc.script(path, always(http.StatusOK))
		on := tg.patchWebhook(t, w.Key, h.ID, obj{"isActive": true})
		if !on.IsActive || on.ConsecutiveFailures != 0 {
			t.Errorf("PATCH isActive true: isActive %v consecutiveFailures %d, want true and 0", on.IsActive, on.ConsecutiveFailures)
		}
		if got := tg.getWebhook(t, w.Key, h.ID); !sameJSON(got, on) {
			t.Errorf("GET after re-enabling:\n%s\nwant\n%s", mustMarshal(t, got), mustMarshal(t, on))
		}
		fourth := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/disable/4"})
		rc.await(t, path, "link.created of the link made after re-enabling", 20*time.Second, func(reqs []hookRequest) bool {
			return slices.ContainsFunc(reqs, func(r hookRequest) bool { return dataID(r) == fourth.ID })
		})
		time.Sleep(1500 * time.Millisecond)
		reqs := rc.requests(path)
		for _, r := range reqs[len(failed):] {
			switch dataID(r) {
			case fourth.ID:
			case first.ID, second.ID:
				t.Errorf("after re-enabling, a failed delivery was attempted again: %s %s", r.Event, r.ID)
			case third.ID:
				t.Logf("after re-enabling, the link made while disabled was delivered (%s)", r.ID)
			default:
				t.Errorf("after re-enabling, an unexpected request: %s", describeRequests([]hookRequest{r}))
			}
		}
		if n := len(slices.DeleteFunc(slices.Clone(reqs), func(r hookRequest) bool { return dataID(r) != fourth.ID })); n != 1 {
			t.Errorf("the new link's message came %d times, want once", n)
		}
		if got := tg.getWebhook(t, w.Key, h.ID); !got.IsActive || got.ConsecutiveFailures != 0 {
			t.Errorf("after a success: isActive %v consecutiveFailures %d, want true and 0", got.IsActive, got.ConsecutiveFailures)
		}
		ds, _ = tg.deliveries(t, w.Key, h.ID, "")
		if len(ds) < 3 || ds[0].Status != "success" || ds[0].Attempts != 1 || ds[0].MessageID != ofID(reqs, fourth.ID) {
			t.Errorf("deliveries after re-enabling: %s; want the new link's first, success after 1 attempt", mustMarshal(t, ds))
		}
		rc.wantClean(t, path)
	})

	t.Run("RotateSecret", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		const path = "rotate"
		u := rc.route(t, path, always(http.StatusOK))
		h := tg.createWebhook(t, w.Key, obj{"name": "rotating", "url": u, "events": []string{"link.created"}})
		rc.setSecret(path, h.Secret)
		tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/rotate/1"})
		before := rc.awaitN(t, path, 1, 20*time.Second)[0]
		if !signaturesOK(h.Secret, before.Header, before.Body) {
			t.Errorf("the first delivery does not verify with the secret of create")
		}

		r := tg.API(t, w.Key, "POST", "/webhooks/"+h.ID+"/rotate-secret", nil).wantSuccess(t, http.StatusOK)
		rotated := webhookFromMap(t, r, r.DataMap(t), true)
		if rotated.Secret == h.Secret {
			t.Fatalf("rotate-secret answered the old secret")
		}
		rc.setSecret(path, rotated.Secret)
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/rotate/2"})
		after := rc.awaitN(t, path, 2, 20*time.Second)[1]
		if dataID(after) != l.ID {
			t.Fatalf("the second delivery is not the second link's: %s", after.Body)
		}
		if !hexSignatureOK(rotated.Secret, after.Header, after.Body) || !standardSignatureOK(rotated.Secret, after.Header, after.Body) {
			t.Errorf("the delivery after rotate-secret does not verify with the new secret: %s / %s",
				after.Header.Get("X-Webhook-Signature"), after.Header.Get("webhook-signature"))
		}
		if hexSignatureOK(h.Secret, after.Header, after.Body) || standardSignatureOK(h.Secret, after.Header, after.Body) {
			t.Errorf("the delivery after rotate-secret still verifies with the old secret")
		}
		if got := tg.getWebhook(t, w.Key, h.ID); got.Secret != "" || !got.IsActive {
			t.Errorf("GET after rotation: %+v", got)
		}
		rc.wantClean(t, path)

		// A message made before the rotation is retried with the new secret.
		w = tg.NewWorkspace(t, "enterprise")
		const retried = "rotate/retried"
		rotating := make(chan struct{})
		u = rc.route(t, retried, func(n int) hookAnswer {
			if n == 1 {
				return hookAnswer{status: http.StatusServiceUnavailable, hold: rotating}
			}
			return hookAnswer{status: http.StatusOK}
		})
		h = tg.createWebhook(t, w.Key, obj{"name": "rotating while retried", "url": u, "events": []string{"link.created"}})
		rc.setSecret(retried, h.Secret)
		tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/rotate/3"})
		rc.awaitN(t, retried, 1, 20*time.Second)
		r = tg.API(t, w.Key, "POST", "/webhooks/"+h.ID+"/rotate-secret", nil).wantSuccess(t, http.StatusOK)
		rotated = webhookFromMap(t, r, r.DataMap(t), true)
		rc.setSecret(retried, rotated.Secret)
		close(rotating)
		reqs := rc.awaitN(t, retried, 2, 20*time.Second)
		if reqs[1].ID != reqs[0].ID || !signaturesOK(rotated.Secret, reqs[1].Header, reqs[1].Body) ||
			hexSignatureOK(h.Secret, reqs[1].Header, reqs[1].Body) || standardSignatureOK(h.Secret, reqs[1].Header, reqs[1].Body) {
			t.Errorf("the retry after rotate-secret: %s; want the same message signed with the new secret only", describeRequests(reqs))
		}
		tg.awaitDelivery(t, w.Key, h.ID, "", "to succeed", 15*time.Second, func(d Delivery) bool { return d.Status == "success" })
		rc.wantClean(t, retried)
	})

	t.Run("Paused", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		const path = "paused"
		u := rc.route(t, path, always(http.StatusOK))
		h := tg.createWebhook(t, w.Key, obj{"name": "paused", "url": u, "events": []string{"link.created"}})
		rc.setSecret(path, h.Secret)
		if off := tg.patchWebhook(t, w.Key, h.ID, obj{"isActive": false}); off.IsActive {
			t.Fatalf("PATCH isActive false: still active")
		}
		tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/paused"})
		time.Sleep(2 * time.Second)
		if reqs := rc.requests(path); len(reqs) != 0 {
			t.Errorf("a webhook switched off got %s", describeRequests(reqs))
		}
		tg.patchWebhook(t, w.Key, h.ID, obj{"isActive": true})
		l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/resumed"})
		rc.awaitN(t, path, 1, 20*time.Second)
		time.Sleep(1500 * time.Millisecond)
		if reqs := rc.requests(path); len(reqs) != 1 || dataID(reqs[0]) != l.ID {
			t.Errorf("switched on again, the webhook got %s; want the new link's link.created only", describeRequests(reqs))
		}
		rc.wantClean(t, path)
	})

	t.Run("TestEvent", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		const path = "test/ok"
		u := rc.route(t, path, func(int) hookAnswer { return hookAnswer{status: http.StatusOK, body: "received"} })
		// The test event goes whatever the webhook subscribes to.
		h := tg.createWebhook(t, w.Key, obj{"name": "tested", "url": u, "events": []string{"link.deleted"}})
		rc.setSecret(path, h.Secret)
		before := time.Now().UTC().Add(-time.Second)
		r := tg.API(t, w.Key, "POST", "/webhooks/"+h.ID+"/test", nil).wantSuccess(t, http.StatusOK)
		d := deliveryFromMap(t, r, r.DataMap(t))
		if d.Event != "test" || d.Status != "success" || d.Attempts != 1 || deref32(d.ResponseStatus) != 200 ||
			deref(d.ResponseBody) != "received" || d.Error != nil || d.NextAttemptAt != nil || d.LastAttemptAt == nil || d.ResponseTimeMs == nil {
			t.Errorf("POST /webhooks/:id/test: %s; want event test, success after 1 attempt, status 200, body received, no error", mustMarshal(t, d))
		}
		if d.LastAttemptAt != nil {
			if at := wantTime(t, "lastAttemptAt", *d.LastAttemptAt); at.Before(before) || at.After(time.Now().Add(time.Second)) {
				t.Errorf("lastAttemptAt %s, want now", *d.LastAttemptAt)
			}
		}
		// The answer came after the attempt: the receiver has it already.
		reqs := rc.requests(path)
		if len(reqs) != 1 || reqs[0].Event != "test" || reqs[0].ID != d.MessageID || reqs[0].payload(t).Event != "test" {
			t.Fatalf("receiver got %s; want the test event, messageId %s", describeRequests(reqs), d.MessageID)
		}
		rc.wantClean(t, path)
		ds, meta := tg.deliveries(t, w.Key, h.ID, "")
		if meta.Total != 1 || len(ds) != 1 || !sameJSON(ds[0], d) {
			t.Errorf("deliveries:\n%s\nwant the test's:\n%s", mustMarshal(t, ds), mustMarshal(t, d))
		}

		// A failed test is retried like any delivery; the answer kept is cut short.
		const flaky = "test/flaky"
		long := strings.Repeat("a long error page. ", 1000)
		u = rc.route(t, flaky, func(n int) hookAnswer {
			if n == 1 {
				return hookAnswer{status: http.StatusBadGateway, body: long}
			}
			return hookAnswer{status: http.StatusNoContent}
		})
		h = tg.createWebhook(t, w.Key, obj{"name": "tested, flaky", "url": u, "events": []string{"*"}})
		rc.setSecret(flaky, h.Secret)
		r = tg.API(t, w.Key, "POST", "/webhooks/"+h.ID+"/test", nil).wantSuccess(t, http.StatusOK)
		d = deliveryFromMap(t, r, r.DataMap(t))
		if d.Event != "test" || d.Status != "pending" || d.Attempts != 1 || deref32(d.ResponseStatus) != 502 || d.Error == nil || d.NextAttemptAt == nil {
			t.Errorf("a test answered 502: %s; want pending after 1 attempt, status 502, an error, a next attempt", mustMarshal(t, d))
		}
		if b := deref(d.ResponseBody); b == "" || len(b) >= len(long) || !strings.HasPrefix(long, b) {
			t.Errorf("responseBody of a %d-byte answer: %d bytes; want its beginning, cut short", len(long), len(b))
		}
		d = tg.awaitDelivery(t, w.Key, h.ID, d.ID, "to end", 15*time.Second, func(d Delivery) bool { return d.Status != "pending" })
		if d.Status != "success" || d.Attempts != 2 || deref32(d.ResponseStatus) != 204 || d.Error != nil {
			t.Errorf("the retried test: %s; want success after 2 attempts, status 204", mustMarshal(t, d))
		}
		if reqs := rc.requests(flaky); len(reqs) != 2 || reqs[0].ID != d.MessageID || reqs[1].ID != d.MessageID {
			t.Errorf("receiver got %s; want 2 attempts of %s", describeRequests(reqs), d.MessageID)
		}
		rc.wantClean(t, flaky)
	})

	t.Run("RetryAfter", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		const path = "retry-after"
		u := rc.route(t, path, func(n int) hookAnswer {
			if n == 1 {
				return hookAnswer{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "3"}}
			}
			return hookAnswer{status: http.StatusOK}
		})
		h := tg.createWebhook(t, w.Key, obj{"name": "busy", "url": u, "events": []string{"link.created"}})
		rc.setSecret(path, h.Secret)
		tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/busy"})
		reqs := rc.awaitN(t, path, 2, 20*time.Second)
		// The receiver asked for 3 s, more than the schedule's 300 ms.
		if gap := reqs[1].At.Sub(reqs[0].At); gap < 2900*time.Millisecond {
			t.Errorf("the retry came %v after a 429 with Retry-After: 3", gap.Round(time.Millisecond))
		}
		d := tg.awaitDelivery(t, w.Key, h.ID, "", "to end", 15*time.Second, func(d Delivery) bool { return d.Status != "pending" })
		if d.Status != "success" || d.Attempts != 2 || reqs[1].ID != reqs[0].ID {
			t.Errorf("after a 429 with Retry-After: %s; want success after 2 attempts of one message", mustMarshal(t, d))
		}
		rc.wantClean(t, path)
	})

	t.Run("FailedAttempts", func(t *testing.T) {
		t.Parallel()
		w := tg.NewWorkspace(t, "enterprise")
		// failedTest makes the test event's first attempt to url, which
		// fails, and returns its delivery; the webhook is gone afterwards.
		failedTest := func(what, path, url string) Delivery {
			t.Helper()
			h := tg.createWebhook(t, w.Key, obj{"name": what, "url": url, "events": []string{"link.created"}})
			if path != "" {
				rc.setSecret(path, h.Secret)
			}
			start := time.Now()
			r := tg.API(t, w.Key, "POST", "/webhooks/"+h.ID+"/test", nil).wantSuccess(t, http.StatusOK)
			d := deliveryFromMap(t, r, r.DataMap(t))
			t.Logf("%s: answered in %v: %s", what, time.Since(start).Round(time.Millisecond), mustMarshal(t, d))
			tg.API(t, w.Key, "DELETE", "/webhooks/"+h.ID, nil).wantNoContent(t)
			if d.Status != "pending" || d.Attempts != 1 || d.Error == nil || *d.Error == "" || d.NextAttemptAt == nil {
				t.Errorf("%s: %s; want pending after 1 failed attempt, with an error and a next attempt", what, mustMarshal(t, d))
			}
			return d
		}

		// A redirect is not followed: it is a failure, and its target gets nothing.
		rc.route(t, "failed/to", always(http.StatusOK))
		from := rc.route(t, "failed/from", func(int) hookAnswer {
			return hookAnswer{status: http.StatusFound, header: map[string]string{"Location": rc.srv.URL + "/failed/to"}}
		})
		if d := failedTest("redirect", "failed/from", from); deref32(d.ResponseStatus) != http.StatusFound {
			t.Errorf("a 302: responseStatus %v, want 302", fmtInt(d.ResponseStatus))
		}
		if reqs := rc.requests("failed/to"); len(reqs) != 0 {
			t.Errorf("the redirect was followed: its target got %s", describeRequests(reqs))
		}

		// Nobody listens.
		if d := failedTest("connection refused", "", "https://127.0.0.1:"+freePort(t)+"/nobody"); d.ResponseStatus != nil {
			t.Errorf("no listener: responseStatus %d, want null", *d.ResponseStatus)
		}

		// An answer that takes longer than 10 s.
		rc.route(t, "failed/slow", func(int) hookAnswer { return hookAnswer{status: http.StatusOK, hold: make(chan struct{})} })
		start := time.Now()
		d := failedTest("timeout", "failed/slow", rc.srv.URL+"/failed/slow")
		if took := time.Since(start); took < 9*time.Second || took > 20*time.Second || d.ResponseStatus != nil ||
			d.ResponseTimeMs == nil || *d.ResponseTimeMs < 9000 || *d.ResponseTimeMs > 15000 {
			t.Errorf("an answer held past 10 s: the test answered after %v with %s; want a failed attempt of about 10 s, no status",
				took.Round(time.Millisecond), mustMarshal(t, d))
		}
		rc.wantClean(t, "failed/from")
		rc.wantClean(t, "failed/slow")
	})

	t.Run("KillDuringRetries", func(t *testing.T) {
		t.Parallel()
		// The second retry comes 3 s after the first: time to kill the
		// server between two attempts of a message.
		s := startServer(t, t.TempDir(), rc.settings("300ms,3s,300ms,300ms,300ms")...)
		w := s.NewWorkspace(t, "enterprise")
		// between fails until the restart; during fails once and then
		// holds its answer, so that the server dies in the middle of an attempt.
		const between, during = "kill/between", "kill/during"
		hb := s.createWebhook(t, w.Key, obj{"name": "between", "url": rc.route(t, between, always(http.StatusInternalServerError)), "events": []string{"link.created"}})
		rc.setSecret(between, hb.Secret)
		hd := s.createWebhook(t, w.Key, obj{"name": "during", "url": rc.route(t, during, func(n int) hookAnswer {
			if n == 1 {
				return hookAnswer{status: http.StatusInternalServerError}
			}
			return hookAnswer{status: http.StatusOK, hold: make(chan struct{})}
		}), "events": []string{"link.created"}})
		rc.setSecret(during, hd.Secret)
		s.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/crash"})

		rc.awaitN(t, during, 2, 20*time.Second)
		db := s.awaitDelivery(t, w.Key, hb.ID, "", "to record 2 attempts", 20*time.Second, func(d Delivery) bool { return d.Attempts == 2 })
		if n := len(rc.requests(between)); n != 2 {
			t.Fatalf("the receiver got %d attempts before the kill, want 2: the test was too slow", n)
		}
		msgID := db.MessageID
		s.killMain(t)
		killed := time.Now()
		rc.script(between, always(http.StatusOK))
		rc.script(during, always(http.StatusOK))
		s.restartMain(t)

		// The message waiting for its retry is delivered on schedule.
		db = s.awaitDelivery(t, w.Key, hb.ID, db.ID, "to succeed after the restart", 30*time.Second, func(d Delivery) bool { return d.Status != "pending" })
		t.Logf("the delivery killed between attempts succeeded %v after the kill", time.Since(killed).Round(time.Millisecond))
		if db.Status != "success" || db.Attempts != 3 || db.MessageID != msgID {
			t.Errorf("the delivery killed between attempts: %s; want success after 3 attempts, messageId %s", mustMarshal(t, db), msgID)
		}
		// The one whose attempt the kill cut short is taken over once the
		// dead process's lease on it ends.
		ds, _ := s.deliveries(t, w.Key, hd.ID, "")
		if len(ds) != 1 {
			t.Fatalf("deliveries of %s: %s, want 1", hd.ID, mustMarshal(t, ds))
		}
		dd := s.awaitDelivery(t, w.Key, hd.ID, ds[0].ID, "to succeed after the restart", 120*time.Second, func(d Delivery) bool { return d.Status != "pending" })
		took := time.Since(killed)
		t.Logf("the delivery killed during an attempt succeeded %v after the kill", took.Round(time.Millisecond))
		if dd.Status != "success" || dd.MessageID != msgID || dd.Attempts < 2 {
			t.Errorf("the delivery killed during an attempt: %s; want success, messageId %s", mustMarshal(t, dd), msgID)
		}
		if took > 75*time.Second {
			t.Errorf("the delivery killed during an attempt was taken over %v after the kill; the lease is 60 s", took.Round(time.Second))
		}
		for _, p := range []string{between, during} {
			reqs := rc.requests(p)
			if len(reqs) != 3 {
				t.Errorf("receiver /%s got %s; want 3 attempts", p, describeRequests(reqs))
			}
			for _, r := range reqs {
				if r.ID != msgID {
					t.Errorf("receiver /%s: attempt %d has X-Webhook-ID %s, want %s", p, r.N, r.ID, msgID)
				}
			}
			rc.wantClean(t, p)
		}
	})
}

// ---------------------------------------------------------------------------
// helpers

// createWebhook POSTs a webhook and asserts 201 with a webhook and its secret.
func (tg *Target) createWebhook(t testing.TB, key string, body obj) Webhook {
	t.Helper()
	r := tg.API(t, key, "POST", "/webhooks", body).wantSuccess(t, http.StatusCreated)
	h := webhookFromMap(t, r, r.DataMap(t), true)
	if !h.IsActive || h.ConsecutiveFailures != 0 {
		t.Fatalf("%s: a new webhook is active with no failures", r)
	}
	return h
}

// getWebhook GETs /webhooks/:id, which shows no secret.
func (tg *Target) getWebhook(t testing.TB, key, id string) Webhook {
	t.Helper()
	r := tg.API(t, key, "GET", "/webhooks/"+id, nil).wantSuccess(t, http.StatusOK)
	return webhookFromMap(t, r, r.DataMap(t), false)
}

// patchWebhook PATCHes a webhook and asserts 200 with the whole webhook, no secret.
func (tg *Target) patchWebhook(t testing.TB, key, id string, body obj) Webhook {
	t.Helper()
	r := tg.API(t, key, "PATCH", "/webhooks/"+id, body).wantSuccess(t, http.StatusOK)
	return webhookFromMap(t, r, r.DataMap(t), false)
}

// listWebhooks GETs /webhooks with the query.
func (tg *Target) listWebhooks(t testing.TB, key, query string) ([]Webhook, Meta) {
	t.Helper()
	r := tg.API(t, key, "GET", "/webhooks"+query, nil).wantSuccess(t, http.StatusOK)
	var raw []map[string]json.RawMessage
	r.Data(t, &raw)
	out := []Webhook{}
	for _, m := range raw {
		out = append(out, webhookFromMap(t, r, m, false))
	}
	return out, r.Meta(t)
}

// awaitWebhook polls the webhook until ok holds.
func (tg *Target) awaitWebhook(t testing.TB, key, id, what string, d time.Duration, ok func(Webhook) bool) Webhook {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		h := tg.getWebhook(t, key, id)
		if ok(h) {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook %s %s: not within %v: %s", id, what, d, mustMarshal(t, h))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deliveries GETs /webhooks/:id/deliveries with the query.
func (tg *Target) deliveries(t testing.TB, key, webhookID, query string) ([]Delivery, Meta) {
	t.Helper()
	r := tg.API(t, key, "GET", "/webhooks/"+webhookID+"/deliveries"+query, nil).wantSuccess(t, http.StatusOK)
	var raw []map[string]json.RawMessage
	r.Data(t, &raw)
	out := []Delivery{}
	for _, m := range raw {
		out = append(out, deliveryFromMap(t, r, m))
	}
	return out, r.Meta(t)
}

// awaitDelivery polls the webhook's deliveries until the one with the id
// (or, with id "", the newest) satisfies ok.
func (tg *Target) awaitDelivery(t testing.TB, key, webhookID, id, what string, d time.Duration, ok func(Delivery) bool) Delivery {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ds, _ := tg.deliveries(t, key, webhookID, "?perPage=100")
		i := slices.IndexFunc(ds, func(x Delivery) bool { return id == "" || x.ID == id })
		if i >= 0 && ok(ds[i]) {
			return ds[i]
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery %s of webhook %s %s: not within %v; deliveries: %s", id, webhookID, what, d, mustMarshal(t, ds))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// webhookFromMap asserts m is a webhook (exactly its members, and secret
// when withSecret) and decodes it.
func webhookFromMap(t testing.TB, r *Response, m map[string]json.RawMessage, withSecret bool) Webhook {
	t.Helper()
	keys := webhookFields
	if withSecret {
		keys = append(slices.Clone(webhookFields), "secret")
	}
	wantExactKeys(t, "webhook of "+r.Method+" "+r.URL, m, keys...)
	if !strings.HasPrefix(string(m["events"]), "[") {
		t.Fatalf("%s: events %s, want an array", r, m["events"])
	}
	var h Webhook
	mustJSON(t, mustMarshal(t, m), &h)
	if !webhookIDRE.MatchString(h.ID) {
		t.Fatalf("%s: id %q, want wh_…", r, h.ID)
	}
	if withSecret {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(h.Secret, "whsec_"))
		if !secretRE.MatchString(h.Secret) || err != nil || len(key) < 24 {
			t.Fatalf("%s: secret %q, want whsec_ and the base64 of at least 24 random bytes", r, h.Secret)
		}
	}
	wantTime(t, "createdAt", h.CreatedAt)
	wantTime(t, "updatedAt", h.UpdatedAt)
	return h
}

// deliveryFromMap asserts m is a delivery and decodes it.
func deliveryFromMap(t testing.TB, r *Response, m map[string]json.RawMessage) Delivery {
	t.Helper()
	wantExactKeys(t, "delivery of "+r.Method+" "+r.URL, m, deliveryFields...)
	var d Delivery
	mustJSON(t, mustMarshal(t, m), &d)
	if !deliveryIDRE.MatchString(d.ID) || !msgIDRE.MatchString(d.MessageID) {
		t.Fatalf("%s: id %q messageId %q, want dlv_… and msg_…", r, d.ID, d.MessageID)
	}
	if !slices.Contains([]string{"pending", "success", "failed"}, d.Status) {
		t.Fatalf("%s: status %q, want pending, success or failed", r, d.Status)
	}
	wantTime(t, "createdAt", d.CreatedAt)
	for name, v := range map[string]*time.Time{"lastAttemptAt": d.LastAttemptAt, "nextAttemptAt": d.NextAttemptAt} {
		if v != nil {
			wantTime(t, name, *v)
		}
	}
	if d.Attempts == 0 && (d.LastAttemptAt != nil || d.ResponseStatus != nil) {
		t.Fatalf("%s: a delivery with no attempt has a last attempt: %s", r, mustMarshal(t, d))
	}
	if d.Status != "pending" && d.NextAttemptAt != nil {
		t.Fatalf("%s: a %s delivery has a next attempt", r, d.Status)
	}
	return d
}

// wantWebhook asserts a webhook's fields, times aside, and its secret when
// want has one.
func wantWebhook(t testing.TB, got, want Webhook) {
	t.Helper()
	want.CreatedAt, want.UpdatedAt = got.CreatedAt, got.UpdatedAt
	if want.Secret == "" {
		want.Secret = got.Secret
	}
	if !sameJSON(got, want) {
		t.Errorf("webhook %s:\n got %s\nwant %s", got.ID, mustMarshal(t, got), mustMarshal(t, want))
	}
}

// withoutSecret is the webhook as GET shows it.
func withoutSecret(h Webhook) Webhook {
	h.Secret = ""
	return h
}

// wantStrings asserts that data has exactly the members of want, all strings with those values.
func wantStrings(t testing.TB, what string, data map[string]json.RawMessage, want map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	wantExactKeys(t, what, data, keys...)
	for k, v := range want {
		var got string
		if err := json.Unmarshal(data[k], &got); err != nil {
			t.Errorf("%s: %s is %s, want a string", what, k, data[k])
			continue
		}
		if got != v {
			t.Errorf("%s: %s %q, want %q", what, k, got, v)
		}
	}
}

// wantLinkRecord asserts that data is the full link record of want.
func wantLinkRecord(t testing.TB, what string, data map[string]json.RawMessage, want Link) {
	t.Helper()
	wantExactKeys(t, what, data, linkFields...)
	var got Link
	mustJSON(t, mustMarshal(t, data), &got)
	if d := diffLinks(sameTimes(want), sameTimes(got)); d != "" {
		t.Errorf("%s differs from the link as the API shows it:\n%s", what, d)
	}
}

// sameTimes puts a link's times in UTC, so that records written by
// different encoders compare (diffLinks encodes them again alike).
func sameTimes(l Link) Link {
	l.CreatedAt, l.UpdatedAt = l.CreatedAt.UTC(), l.UpdatedAt.UTC()
	for _, p := range []**time.Time{&l.ExpiresAt, &l.LastClickedAt} {
		if *p != nil {
			v := (**p).UTC()
			*p = &v
		}
	}
	return l
}

// dataID is data.id of a delivery's payload, "" when it has none.
func dataID(r hookRequest) string {
	var p struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(r.Body, &p)
	return p.Data.ID
}

// ofID is the X-Webhook-ID of the first request whose data.id is id.
func ofID(reqs []hookRequest, id string) string {
	for _, r := range reqs {
		if dataID(r) == id {
			return r.ID
		}
	}
	return ""
}

// loopbackName is a host name that resolves to loopback addresses only and
// that the SSRF guard cannot refuse by its name alone: this machine's name
// when it is one; "" (and a log line) when there is none.
func loopbackName(t testing.TB) string {
	t.Helper()
	name, err := os.Hostname()
	if err != nil || name == "" || strings.EqualFold(name, "localhost") {
		t.Logf("no host name that resolves to loopback (%q, %v): the check at delivery is not made", name, err)
		return ""
	}
	addrs, err := net.LookupHost(name)
	if err != nil || len(addrs) == 0 {
		t.Logf("the host name %s does not resolve (%v): the check at delivery is not made", name, err)
		return ""
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip == nil || !ip.IsLoopback() {
			t.Logf("the host name %s resolves to %v, not only loopback: the check at delivery is not made", name, addrs)
			return ""
		}
	}
	return name
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func fmtInt(p *int) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

func deref32(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// killMain kills the server's main process (`shortlink serve`, or the split
// deployment's controlplane) with SIGKILL, as a crash or an OOM kill would.
// Its stderr is shown if the test fails.
func (s *Server) killMain(t *testing.T) {
	t.Helper()
	old := s.main
	old.kill()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stderr of the killed %s:\n%s", old.name, tail(old.stderr.String(), 8000))
		}
	})
}

// restartMain starts the main process again, after killMain, with the same
// storage and settings, and points s.Target at it; Stop stops the new one.
func (s *Server) restartMain(t *testing.T) {
	t.Helper()
	bin, patterns := binary, []*regexp.Regexp{apiLine, shortLine, edgeLine}
	if splitShape {
		bin, patterns = splitBins.controlplane, []*regexp.Regexp{apiLine, shortLine}
	}
	p, err := startProc(s.main.name, bin, s.adminEnv, "serve")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.awaitBanner(90*time.Second, patterns...); err != nil {
		t.Fatal(err)
	}
	s.main = p
	out := p.stdout.String()
	edge := s.EdgeBase
	if !splitShape {
		edge = edgeLine.FindStringSubmatch(out)[1]
	}
	s.Target = s.newTarget(apiLine.FindStringSubmatch(out)[1], shortLine.FindStringSubmatch(out)[1], edge)
}
