package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/idempotency"
)

// IdempotencyKeyHeader names the header that makes a POST safe to retry
// (CONTRACT §13, as Stripe's).
const IdempotencyKeyHeader = "Idempotency-Key"

// ReplayedHeader is set to "true" on an answer replayed for a repeated key, as
// Stripe's Idempotent-Replayed.
const ReplayedHeader = "Idempotent-Replayed"

// maxIdempotencyKey is the longest key accepted, Stripe's limit.
const maxIdempotencyKey = 255

// sweepEvery is how often, at most, a control plane deletes expired keys.
const sweepEvery = time.Hour

// replayedHeaders are the headers of an answer that describe its body and are
// replayed with it. X-Request-ID and the X-RateLimit-* headers belong to each
// request and are the retry's own.
var replayedHeaders = []string{"Content-Type", "Content-Disposition", "Location", "Allow"}

// idempotent gives the POSTs of /api/v1 their Idempotency-Key (CONTRACT §13):
// the first request with a key runs and its answer is stored (per workspace,
// 24 h); a repeat with the same key and the same request (method, path, query
// and body, JSON compared by value) gets that answer again, with
// Idempotent-Replayed: true, and runs nothing; the same key with another
// request is 409 IDEMPOTENCY_KEY_REUSED; a repeat while the first still runs
// is 409 IDEMPOTENCY_KEY_IN_USE with Retry-After (Stripe answers 409 there
// too). Server errors (5xx) are not stored, nor answers about the caller's
// key (401, 403): a retry runs again. Requests without an API key (the
// public POST /qr/generate, which changes nothing) ignore the header.
//
// It runs after guard (a replay counts against the rate limit, as every
// request) and before the route's permission check.
func (a *API) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		values := r.Header.Values(IdempotencyKeyHeader)
		p := principalOf(r.Context())
		if r.Method != http.MethodPost || len(values) == 0 || p == nil {
			next.ServeHTTP(w, r)
			return
		}
		key, err := parseIdempotencyKey(values)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		body, err := readBody(r)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		ctx := r.Context()
		ws := p.Workspace.ID
		now := a.now()
		begun, err := a.store.BeginIdempotent(ctx, ws, key, requestFingerprint(r.Method, r.URL.Path, r.URL.RawQuery, body), now)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		switch begun.State {
		case idempotency.Replay:
			replay(w, begun.Response)
			return
		case idempotency.Mismatch:
			a.writeError(w, r, fault.New(fault.IdempotencyKeyReused,
				"this Idempotency-Key was used with another request (method, path or body) in the last 24 hours; use a new key for a new request"))
			return
		case idempotency.InProgress:
			w.Header().Set("Retry-After", "1")
			a.writeError(w, r, fault.New(fault.IdempotencyKeyInUse,
				"the first request with this Idempotency-Key is still being processed; retry later"))
			return
		case idempotency.Started:
		default:
			a.writeError(w, r, errors.New("idempotency: unknown state "+begun.State.String()))
			return
		}
		a.sweepIdempotencyKeys(now)

		// The answer is held until it is stored, so that a client that
		// retries the moment it has it finds it stored.
		rec := &heldResponse{header: w.Header()}
		done := false
		defer func() {
			// A panic (answered 500 by recoverPanics) leaves nothing stored.
			if !done {
				a.releaseIdempotencyKey(ctx, ws, key, begun.Claim)
			}
		}()
		next.ServeHTTP(rec, r)
		done = true
		status := rec.statusCode()
		if storable(status) {
			stored := idempotency.Response{Status: status, Header: http.Header{}, Body: rec.body.Bytes()}
			for _, name := range replayedHeaders {
				if v := w.Header().Values(name); len(v) > 0 {
					stored.Header[name] = v
				}
			}
			if err := a.store.CompleteIdempotent(context.WithoutCancel(ctx), ws, key, begun.Claim, stored); err != nil {
				// The request ran: answer it; a retry will find the key in
				// progress until its lock runs out, never run it twice.
				a.log.ErrorContext(ctx, "storing an idempotent answer failed", "request_id", requestID(ctx), "err", err)
			}
		} else {
			a.releaseIdempotencyKey(ctx, ws, key, begun.Claim)
		}
		w.WriteHeader(status)
		_, _ = w.Write(rec.body.Bytes())
	})
}

// storable reports whether an answer of the status is kept for retries: a
// success or a client error that a retry of the same request would get
// again. Not server errors, nor the caller's key being unknown or lacking a
// permission (401, 403), which the caller can fix and retry.
func storable(status int) bool {
	return status < 500 && status != http.StatusUnauthorized && status != http.StatusForbidden
}

func replay(w http.ResponseWriter, r *idempotency.Response) {
	h := w.Header()
	for _, name := range replayedHeaders {
		h.Del(name)
		for _, v := range r.Header.Values(name) {
			h.Add(name, v)
		}
	}
	h.Set(ReplayedHeader, "true")
	w.WriteHeader(r.Status)
	_, _ = w.Write(r.Body)
}

func (a *API) releaseIdempotencyKey(ctx context.Context, ws, key, claim string) {
	if err := a.store.ReleaseIdempotent(context.WithoutCancel(ctx), ws, key, claim); err != nil {
		// The key stays in progress until its lock runs out; then a retry runs.
		a.log.ErrorContext(ctx, "releasing an idempotency key failed", "request_id", requestID(ctx), "err", err)
	}
}

// sweepIdempotencyKeys deletes expired keys in the background, at most once
// per sweepEvery per process (expired keys are ignored meanwhile anyway).
func (a *API) sweepIdempotencyKeys(now time.Time) {
	last := a.lastSweep.Load()
	if now.Unix()-last < int64(sweepEvery/time.Second) || !a.lastSweep.CompareAndSwap(last, now.Unix()) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n, err := a.store.DeleteExpiredIdempotent(ctx, now)
		if err != nil {
			a.log.WarnContext(ctx, "deleting expired idempotency keys failed", "err", err)
			return
		}
		a.log.DebugContext(ctx, "deleted expired idempotency keys", "count", n)
	}()
}

// parseIdempotencyKey returns the key of the header's values: exactly one,
// of 1–255 printable ASCII characters.
func parseIdempotencyKey(values []string) (string, error) {
	if len(values) != 1 {
		return "", fault.Field(fault.Validation, IdempotencyKeyHeader, "must be sent once")
	}
	k := values[0]
	if len(k) == 0 || len(k) > maxIdempotencyKey {
		return "", fault.Field(fault.Validation, IdempotencyKeyHeader,
			"must be 1 to "+strconv.Itoa(maxIdempotencyKey)+" characters long, like a UUID")
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return "", fault.Field(fault.Validation, IdempotencyKeyHeader, "must hold printable ASCII characters only")
		}
	}
	return k, nil
}

// requestFingerprint identifies a request for its key: its method, path,
// query and body. A JSON body counts by its value (member order, spacing and
// escapes do not matter), so that a client that encodes the same request
// again matches.
func requestFingerprint(method, path, rawQuery string, body []byte) string {
	h := sha256.New()
	for _, part := range []string{method, path, rawQuery} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{':'})
		h.Write([]byte(part))
	}
	h.Write(canonicalJSON(body))
	return hex.EncodeToString(h.Sum(nil))
}

// canonicalJSON returns the body re-encoded with its objects' members
// sorted and numbers as written, or the body itself ('r' + bytes, apart
// from every JSON encoding, which starts 'j') when it is not one JSON value.
func canonicalJSON(body []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil {
		if _, err := dec.Token(); err == io.EOF {
			if b, err := json.Marshal(v); err == nil {
				return append([]byte{'j'}, b...)
			}
		}
	}
	return append([]byte{'r'}, body...)
}

// heldResponse keeps a handler's answer until the idempotency middleware has
// stored it. Its headers are the real writer's.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// Header implements http.ResponseWriter.
func (h *heldResponse) Header() http.Header { return h.header }

// WriteHeader implements http.ResponseWriter.
func (h *heldResponse) WriteHeader(code int) {
	if h.status == 0 {
		h.status = code
	}
}

// Write implements http.ResponseWriter.
func (h *heldResponse) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return h.body.Write(b)
}

func (h *heldResponse) statusCode() int {
	if h.status == 0 {
		return http.StatusOK
	}
	return h.status
}
