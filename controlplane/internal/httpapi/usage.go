package httpapi

import (
	"net/http"

	"shortlink.dev/api"
)

// getUsage answers GET /usage (CONTRACT §10). The period is the calendar month, UTC.
func (a *API) getUsage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	got, err := a.usage.Get(ctx, principalOf(ctx).Workspace)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	var u api.Usage
	u.Plan = string(got.Plan)
	u.Period.Start, u.Period.End = got.Start, got.End
	u.Links.Used, u.Links.Limit = got.Links, got.LinkLimit
	u.Clicks.ThisPeriod = got.Clicks
	u.Domains, u.QRCodes, u.Galleries, u.Webhooks = got.Domains, got.QRCodes, got.Galleries, got.Webhooks
	if res, ok := rateOf(ctx); ok {
		u.RateLimit.Limit, u.RateLimit.Remaining, u.RateLimit.Reset = res.Limit, res.Remaining, res.Reset.Unix()
	}
	writeData(w, http.StatusOK, u)
}
