package httpapi

import (
	"net/http"
)

type usageJSON struct {
	Plan   string `json:"plan"`
	Period struct {
		Start apiTime `json:"start"`
		End   apiTime `json:"end"`
	} `json:"period"`
	Links struct {
		Used  int  `json:"used"`
		Limit *int `json:"limit"`
	} `json:"links"`
	Clicks struct {
		ThisPeriod int64 `json:"thisPeriod"`
	} `json:"clicks"`
	Domains   int `json:"domains"`
	QRCodes   int `json:"qrCodes"`
	Galleries int `json:"galleries"`
	Webhooks  int `json:"webhooks"`
	RateLimit struct {
		Limit     int   `json:"limit"`
		Remaining int   `json:"remaining"`
		Reset     int64 `json:"reset"`
	} `json:"rateLimit"`
}

// getUsage answers GET /usage (CONTRACT §10). The period is the calendar month, UTC.
func (a *API) getUsage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	got, err := a.usage.Get(ctx, principalOf(ctx).Workspace)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	var u usageJSON
	u.Plan = string(got.Plan)
	u.Period.Start, u.Period.End = apiTime(got.Start), apiTime(got.End)
	u.Links.Used, u.Links.Limit = got.Links, got.LinkLimit
	u.Clicks.ThisPeriod = got.Clicks
	u.Domains, u.QRCodes, u.Galleries, u.Webhooks = got.Domains, got.QRCodes, got.Galleries, got.Webhooks
	if res, ok := rateOf(ctx); ok {
		u.RateLimit.Limit, u.RateLimit.Remaining, u.RateLimit.Reset = res.Limit, res.Remaining, res.Reset.Unix()
	}
	writeData(w, http.StatusOK, u)
}
