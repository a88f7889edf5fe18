package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"shortlink.dev/shared/gallery"
	"shortlink.dev/shared/link"
	"shortlink.dev/shared/sqlstore"
	"shortlink.dev/shared/webhook"
)

// racingStore runs before (when set) ahead of each UpdateLinks and
// UpdateLink, as if another request wrote between the service's read of
// the links and its write.
type racingStore struct {
	Store
	beforeMany, beforeOne func()
	// alwaysChanged makes every UpdateWebhook and UpdateGallery find its
	// record changed since it was read, as if another writer always won.
	alwaysChanged bool
}

func (r *racingStore) UpdateWebhook(ctx context.Context, w *webhook.Webhook, readAt time.Time, resetFailures bool) error {
	if r.alwaysChanged {
		return webhook.ErrChanged
	}
	return r.Store.UpdateWebhook(ctx, w, readAt, resetFailures)
}

func (r *racingStore) UpdateGallery(ctx context.Context, g *gallery.Gallery, readAt time.Time) error {
	if r.alwaysChanged {
		return gallery.ErrChanged
	}
	return r.Store.UpdateGallery(ctx, g, readAt)
}

func (r *racingStore) UpdateLinks(ctx context.Context, ls []*link.Link, readAt []time.Time, maxActive int) error {
	if r.beforeMany != nil {
		r.beforeMany()
	}
	return r.Store.UpdateLinks(ctx, ls, readAt, maxActive)
}

func (r *racingStore) UpdateLink(ctx context.Context, l *link.Link, readAt time.Time, maxActive int) error {
	if r.beforeOne != nil {
		r.beforeOne()
	}
	return r.Store.UpdateLink(ctx, l, readAt, maxActive)
}

// racingAPI is a postAPI whose store is a racingStore.
func racingAPI(t *testing.T) (*postAPI, *racingStore) {
	t.Helper()
	rs := &racingStore{}
	a := mustPostAPI(t, postOptions{store: func(st *sqlstore.Store) Store { rs.Store = st; return rs }})
	return a, rs
}

// linkDestTags reads one link's destination and tags.
func (a *postAPI) linkDestTags(t *testing.T, id string) (string, []string) {
	t.Helper()
	rec := a.send(t, a.key, "GET", "/api/v1/links/"+id, "")
	var env struct {
		Data struct {
			DestinationURL string   `json:"destinationUrl"`
			Tags           []string `json:"tags"`
		} `json:"data"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &env) != nil {
		t.Fatalf("GET link %s: %d %s", id, rec.Code, rec.Body)
	}
	return env.Data.DestinationURL, env.Data.Tags
}

// TestFixesBulkKeepsRacingPatch: a PATCH /links/{id} landing between the
// bulk change's read of the links and its write is not undone: the bulk
// change reads them again and applies itself on top.
func TestFixesBulkKeepsRacingPatch(t *testing.T) {
	a, rs := racingAPI(t)
	ids := mustLinks(t, a, a.key, 2, `["old"]`)
	var once sync.Once
	rs.beforeMany = func() {
		once.Do(func() {
			rec := a.send(t, a.key, "PATCH", "/api/v1/links/"+ids[1], `{"destinationUrl":"https://example.com/newer"}`)
			if rec.Code != http.StatusOK {
				t.Errorf("racing PATCH: %d %s", rec.Code, rec.Body)
			}
		})
	}
	bulkLinks(t, a, a.key, `{"linkIds":`+idList(ids...)+`,"addTags":["spring"]}`)
	dest, tags := a.linkDestTags(t, ids[1])
	if dest != "https://example.com/newer" {
		t.Errorf("destination after the bulk change %q, want the racing PATCH's https://example.com/newer", dest)
	}
	if !slices.Equal(tags, []string{"old", "spring"}) {
		t.Errorf("tags %v, want [old spring]", tags)
	}
}

// TestFixesPatchKeepsRacingBulk: a bulk change landing between a single
// PATCH's read and its write is not undone either.
func TestFixesPatchKeepsRacingBulk(t *testing.T) {
	a, rs := racingAPI(t)
	ids := mustLinks(t, a, a.key, 1, `["old"]`)
	var once sync.Once
	rs.beforeOne = func() {
		once.Do(func() { bulkLinks(t, a, a.key, `{"linkIds":`+idList(ids...)+`,"addTags":["spring"]}`) })
	}
	rec := a.send(t, a.key, "PATCH", "/api/v1/links/"+ids[0], `{"destinationUrl":"https://example.com/newer"}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("PATCH: %d %s", rec.Code, rec.Body)
	}
	dest, tags := a.linkDestTags(t, ids[0])
	if dest != "https://example.com/newer" || !slices.Equal(tags, []string{"old", "spring"}) {
		t.Errorf("link after the PATCH: %q %v, want https://example.com/newer [old spring]", dest, tags)
	}
}

// TestFixesBulkConflict: when other writes keep landing between its read
// and its write, the bulk change gives up with 409 CONFLICT in the
// envelope and changes nothing.
func TestFixesBulkConflict(t *testing.T) {
	a, rs := racingAPI(t)
	ids := mustLinks(t, a, a.key, 2, `["old"]`)
	n := 0
	rs.beforeMany = func() {
		n++
		rec := a.send(t, a.key, "PATCH", "/api/v1/links/"+ids[0], fmt.Sprintf(`{"title":"racer %d"}`, n))
		if rec.Code != http.StatusOK {
			t.Errorf("racing PATCH: %d %s", rec.Code, rec.Body)
		}
	}
	rec := a.send(t, a.key, "PATCH", "/api/v1/links/bulk", `{"linkIds":`+idList(ids...)+`,"addTags":["spring"]}`)
	var env struct {
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if rec.Code != http.StatusConflict || json.Unmarshal(rec.Body.Bytes(), &env) != nil ||
		env.Error.Code != "CONFLICT" || env.Error.Message == "" || env.Error.Details == nil {
		t.Fatalf("bulk change raced every time: %d %s, want 409 CONFLICT in the envelope", rec.Code, rec.Body)
	}
	if n != 10 {
		t.Errorf("bulk change tried %d times, want 10", n)
	}
	for _, id := range ids {
		if _, tags := a.linkDestTags(t, id); !slices.Equal(tags, []string{"old"}) {
			t.Errorf("link %s tags %v after the refused bulk change, want [old]", id, tags)
		}
	}
}

// TestFixesConcurrentBulkTags: concurrent bulk changes adding different
// tags to the same links all land.
func TestFixesConcurrentBulkTags(t *testing.T) {
	a := mustPostAPI(t, postOptions{})
	ids := mustLinks(t, a, a.key, 3, `[]`)
	const n = 6
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := a.send(t, a.key, "PATCH", "/api/v1/links/bulk", fmt.Sprintf(`{"linkIds":%s,"addTags":["t%d"]}`, idList(ids...), i))
			if rec.Code != http.StatusOK {
				t.Errorf("bulk change %d: %d %s", i, rec.Code, rec.Body)
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		_, tags := a.linkDestTags(t, id)
		slices.Sort(tags)
		if len(tags) != n {
			t.Errorf("link %s tags %v, want t0 to t%d", id, tags, n-1)
		}
	}
}

// TestFixesWebhookAndGalleryConflict: a webhook or gallery that keeps
// changing under a PATCH is 409 CONFLICT in the envelope after its retries
// (it was the store's bare error: a 500).
func TestFixesWebhookAndGalleryConflict(t *testing.T) {
	a, rs := racingAPI(t)
	rec := a.send(t, a.key, "POST", "/api/v1/webhooks", `{"name":"w","url":"https://hooks.example.com/x","events":["link.created"]}`)
	var wh struct {
		Data struct{ ID string } `json:"data"`
	}
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &wh) != nil {
		t.Fatalf("create webhook: %d %s", rec.Code, rec.Body)
	}
	rec = a.send(t, a.key, "POST", "/api/v1/galleries", `{"slug":"racing","title":"g"}`)
	var g struct {
		Data struct{ ID string } `json:"data"`
	}
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &g) != nil {
		t.Fatalf("create gallery: %d %s", rec.Code, rec.Body)
	}
	rs.alwaysChanged = true
	for path, body := range map[string]string{"/api/v1/webhooks/" + wh.Data.ID: `{"name":"n"}`, "/api/v1/galleries/" + g.Data.ID: `{"title":"t"}`} {
		rec := a.send(t, a.key, "PATCH", path, body)
		if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), `"code":"CONFLICT"`) {
			t.Errorf("PATCH %s that always raced: %d %s, want 409 CONFLICT", path, rec.Code, rec.Body)
		}
	}
}
