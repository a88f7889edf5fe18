package httpapi

import (
	"net/http"
	"time"

	"shortlink.dev/api"
)

// usage answers GET /usage (CONTRACT §10). The period is the calendar month, UTC.
func (a *API) usage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ws := principalOf(ctx).Workspace
	var u api.Usage
	u.Plan = string(ws.Plan)
	now := a.now().UTC()
	start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	u.Period.Start, u.Period.End = start, start.AddDate(0, 1, 0)

	used, err := a.store.CountActiveLinks(ctx, ws.ID)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	u.Links.Used = used
	if limit := a.cfg.LinkLimit(ws.Plan); limit >= 0 {
		u.Links.Limit = &limit
	}
	if a.stats != nil {
		if u.Clicks.ThisPeriod, err = a.stats.ClicksSince(ctx, ws.ID, start); err != nil {
			a.writeError(w, r, err)
			return
		}
	}
	if u.Domains, err = a.store.CountDomains(ctx, ws.ID); err != nil {
		a.writeError(w, r, err)
		return
	}
	if u.QRCodes, err = a.store.CountQRCodes(ctx, ws.ID); err != nil {
		a.writeError(w, r, err)
		return
	}
	if u.Galleries, err = a.store.CountGalleries(ctx, ws.ID); err != nil {
		a.writeError(w, r, err)
		return
	}
	if u.Webhooks, err = a.store.CountWebhooks(ctx, ws.ID); err != nil {
		a.writeError(w, r, err)
		return
	}
	if res, ok := rateOf(ctx); ok {
		u.RateLimit.Limit, u.RateLimit.Remaining, u.RateLimit.Reset = res.Limit, res.Remaining, res.Reset.Unix()
	}
	writeData(w, http.StatusOK, u)
}
