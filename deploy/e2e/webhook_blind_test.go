package e2e

// No blind window (issue 19, point 2): a webhook receives every click made
// after its creation answered 201, even when the click pipeline had just
// cached its workspace's subscriptions as "none".

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// blindSpotRounds is how many workspaces the test tries: each is one chance
// for a stale cache to lose the click.
const blindSpotRounds = 5

// TestWebhookNoBlindWindow: in each round a new workspace clicks once (the
// pipeline caches "no webhooks" for it), creates a webhook subscribed to
// click and, the moment the 201 is in, clicks another of its links; that
// click reaches the webhook.
func TestWebhookNoBlindWindow(t *testing.T) {
	needBinary(t)
	t.Parallel()
	rc := newHookReceiver(t)
	tg := newTarget(t, rc.settings(fastRetries)...)

	for round := range blindSpotRounds {
		t.Run(fmt.Sprintf("Round%d", round+1), func(t *testing.T) {
			w := tg.NewWorkspace(t, "enterprise")
			warm := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/blind-spot/warm"})
			after := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/blind-spot/after"})
			// The pipeline stores the click, then looks the workspace's
			// subscriptions up: none, cached.
			wantRedirect(t, tg.Edge(t, "GET", warm.Slug, nil, nil), warm.DestinationURL)
			tg.awaitClicks(t, w.Key, warm.ID, 1)

			path := fmt.Sprintf("blindSpot/%d", round+1)
			h := tg.createWebhook(t, w.Key, obj{"name": path, "url": rc.route(t, path, always(http.StatusOK)),
				"events": []string{"click"}})
			rc.setSecret(path, h.Secret)
			wantRedirect(t, tg.Edge(t, "GET", after.Slug, nil, nil), after.DestinationURL)

			rc.await(t, path, "the click made right after the webhook's creation", pipelineWait, func(reqs []hookRequest) bool {
				for _, r := range reqs {
					if r.Event == "click" && blindSpotLinkID(r) == after.ID {
						return true
					}
				}
				return false
			})
			rc.wantClean(t, path)
		})
	}
}

// blindSpotLinkID is data.linkId of a click delivery.
func blindSpotLinkID(r hookRequest) string {
	var p struct {
		Data struct {
			LinkID string `json:"linkId"`
		} `json:"data"`
	}
	_ = json.Unmarshal(r.Body, &p)
	return p.Data.LinkID
}
