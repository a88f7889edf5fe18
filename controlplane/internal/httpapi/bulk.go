package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"shortlink.dev/api"
	"shortlink.dev/controlplane/internal/links"
	"shortlink.dev/shared/fault"
)

// maxBulkLinks is the most links one POST /links/bulk creates (Dub's limit).
const maxBulkLinks = 100

// createLinksBulk answers POST /links/bulk (CONTRACT §13): a JSON array of
// 1–100 bodies of POST /links, created one after the other through the same
// service call, each succeeding or failing on its own (validation, the
// plan's link limit, a slug taken, by an earlier item too). The answer is 200
// with data listing, in the items' order, each item's envelope; as Dub's
// bulk create, a batch whose items all fail is still a 200. It counts as one
// request against the rate limit.
func (a *API) createLinksBulk(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	items, err := decodeBulk(body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	p := principalOf(ctx)
	out := make([]api.BulkItem, len(items))
	for i, raw := range items {
		var in links.Input
		if err := decodeObject(raw, &in); err != nil {
			out[i] = a.bulkError(r, i, err)
			continue
		}
		l, err := a.links.Create(ctx, p.Workspace, p.Key.ID, in)
		if err != nil {
			out[i] = a.bulkError(r, i, err)
			continue
		}
		rec := a.linkJSON(l)
		out[i] = api.BulkItem{Success: true, Data: &rec}
	}
	writeData(w, http.StatusOK, out)
}

// decodeBulk splits a bulk body into its items: a JSON array of 1 to
// maxBulkLinks values, else VALIDATION_ERROR on the body.
func decodeBulk(body []byte) ([]json.RawMessage, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil || items == nil {
		return nil, fault.Field(fault.Validation, "body",
			"must be a JSON array of 1 to "+strconv.Itoa(maxBulkLinks)+" link objects")
	}
	if len(items) == 0 || len(items) > maxBulkLinks {
		return nil, fault.Field(fault.Validation, "body",
			"holds "+strconv.Itoa(len(items))+" links; send 1 to "+strconv.Itoa(maxBulkLinks))
	}
	return items, nil
}

// bulkError is the envelope of an item that failed, as writeError would
// write it: an error without a code of ours is logged and shown as
// INTERNAL_ERROR, or SERVICE_UNAVAILABLE when the database could not be
// reached (the item was not created; send it again later).
func (a *API) bulkError(r *http.Request, item int, err error) api.BulkItem {
	e, ok := fault.As(err)
	if !ok || e.Code.Status() >= 500 {
		a.log.ErrorContext(r.Context(), "server error", "request_id", requestID(r.Context()),
			"method", r.Method, "path", r.URL.Path, "item", item, "err", err)
	}
	e = publicError(r, err)
	details := map[string]any{}
	if len(e.Fields) > 0 {
		details["fields"] = e.Fields
	}
	return api.BulkItem{Error: &api.Error{Code: string(e.Code), Message: e.Message, Details: details}}
}

// updateLinksBulk answers PATCH /links/bulk (docs/api.md, "Bulk link
// changes"): archive or restore 1–100 of the workspace's links, add tags to
// them or remove tags, all in one transaction. The answer is 200 with the
// links, in the order of linkIds; any error changes none of them.
func (a *API) updateLinksBulk(w http.ResponseWriter, r *http.Request) {
	var in links.BulkUpdate
	if err := decodeJSON(r, &in); err != nil {
		a.writeError(w, r, err)
		return
	}
	list, err := a.links.UpdateMany(r.Context(), principalOf(r.Context()).Workspace, in)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]api.Link, len(list))
	for i, l := range list {
		out[i] = a.linkJSON(l)
	}
	writeData(w, http.StatusOK, out)
}
