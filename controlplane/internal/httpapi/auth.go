package httpapi

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"shortlink.dev/controlplane/internal/keys"
	"shortlink.dev/controlplane/internal/ratelimit"
	"shortlink.dev/shared/audit"
	"shortlink.dev/shared/clientip"
	"shortlink.dev/shared/fault"
	"shortlink.dev/shared/workspace"
)

// principal is who a request acts for: an API key of a workspace, or a
// person signed in to the dashboard (User set; Key is then the member's
// key, workspace.MemberKey, holding the role's permissions).
type principal struct {
	Workspace *workspace.Workspace
	Key       *workspace.APIKey
	User      *workspace.User
}

func principalOf(ctx context.Context) *principal {
	p, _ := ctx.Value(principalKey).(*principal)
	return p
}

func rateOf(ctx context.Context) (ratelimit.Result, bool) {
	r, ok := ctx.Value(rateKey).(ratelimit.Result)
	return r, ok
}

// guard identifies the caller and counts the request against its rate limit:
// the workspace's plan rate for a valid key, the free rate per client IP for
// everyone else (public endpoints and requests with a bad key). Every response
// below it carries the X-RateLimit-* headers. A request with a key that is not
// valid is answered 401 here; one with no key goes on, for public routes, and
// routes that need a key refuse it with need().
func (a *API) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		p, authErr := a.identify(ctx, r.Header.Get("Authorization"))
		call := inProcessOf(ctx)
		if call != nil {
			p, authErr = a.principalOfKey(ctx, call.key)
		}

		key, limit := "ip:"+a.clientIP(r).String(), a.cfg.RateLimit(workspace.Free)
		if p != nil {
			key, limit = "ws:"+p.Workspace.ID, a.cfg.RateLimit(p.Workspace.Plan)
		}
		var (
			res ratelimit.Result
			err error
		)
		if fault.Unreachable(authErr) {
			// The key could not be checked (the database is away): the
			// answer is 503, and the request is counted nowhere: not
			// against the client's address at the free rate, which would
			// have a workspace's own clients refused 429 for the rest of
			// the minute once the database is back.
			res = ratelimit.Result{Allowed: true, Limit: limit, Remaining: limit, Reset: a.now().Truncate(time.Minute).Add(time.Minute)}
		} else if call != nil {
			res, err = call.counted.allow(func() (ratelimit.Result, error) { return a.limiter.Allow(ctx, key, limit) })
		} else {
			res, err = a.limiter.Allow(ctx, key, limit)
		}
		if err != nil {
			// A limiter that cannot count (Redis down) must not take the API down.
			a.log.WarnContext(ctx, "rate limiter unavailable; request allowed", "err", err)
			res = ratelimit.Result{Allowed: true, Limit: limit, Remaining: limit}
		}
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(res.Limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(res.Reset.Unix(), 10))
		if !res.Allowed {
			retry := res.RetryAfter(a.now())
			h.Set("Retry-After", strconv.Itoa(retry))
			a.writeError(w, r, fault.New(fault.RateLimited, "rate limit of %d requests per minute exceeded; retry in %d s", res.Limit, retry))
			return
		}
		if authErr != nil {
			a.writeError(w, r, authErr)
			return
		}
		ctx = context.WithValue(ctx, rateKey, res)
		// The audit log records who made each change, and from where.
		req := audit.Request{IP: a.clientIP(r).String(), UserAgent: r.UserAgent()}
		if p != nil {
			ctx = context.WithValue(ctx, principalKey, p)
			req.Actor = audit.Actor{Type: audit.ActorKey, ID: p.Key.ID, Name: p.Key.Name}
			if p.User != nil {
				req.Actor = audit.Actor{Type: audit.ActorUser, ID: p.User.ID, Name: p.User.Name}
			}
		}
		ctx = audit.WithRequest(ctx, req)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// identify returns the principal of an Authorization header: nil without a
// header, an UNAUTHORIZED error for a malformed or unknown key.
func (a *API) identify(ctx context.Context, header string) (*principal, error) {
	if header == "" {
		return nil, nil
	}
	scheme, token, ok := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, fault.New(fault.Unauthorized, "the Authorization header must be: Bearer <API key>")
	}
	k, err := a.store.APIKeyByHash(ctx, workspace.HashKey(token))
	if fault.Is(err, fault.NotFound) {
		return nil, fault.New(fault.Unauthorized, "invalid API key")
	}
	if err != nil {
		return nil, err
	}
	ws, err := a.store.GetWorkspace(ctx, k.WorkspaceID)
	if err != nil {
		return nil, err
	}
	p := &principal{Workspace: ws, Key: k}
	// A person's session, or a personal key: the audit log names the person.
	p.User, _ = k.Personal()
	return p, nil
}

// signedIn lets a request through with any key of a workspace: the routes
// every role may use (GET /members).
func (a *API) signedIn(next http.Handler) http.Handler { return a.need("")(next) }

// need lets a request through only with a key that holds perm (any key of
// the workspace when perm is "").
func (a *API) need(perm workspace.Permission) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := principalOf(r.Context())
			if p == nil {
				a.writeError(w, r, fault.New(fault.Unauthorized, "missing API key; send Authorization: Bearer <API key>"))
				return
			}
			if perm != "" && !p.Key.Has(perm) {
				a.writeError(w, r, fault.New(fault.Forbidden, "%s lacks the %s permission", keys.Subject(p.Key), perm))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// clientIP is the request's client address; X-Forwarded-For counts only from
// SHORTLINK_TRUSTED_PROXIES.
func (a *API) clientIP(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.IPv6Unspecified()
	}
	return clientip.Resolve(ap.Addr(), r.Header.Get("X-Forwarded-For"), a.cfg.TrustedProxies)
}

// inProcess is the context key of WithKey.
type inProcess struct{}

// inProcessCall is what WithKey puts in a context: the key, and the one
// count against the rate limit that every request under it shares.
type inProcessCall struct {
	key     *workspace.APIKey
	counted *countOnce
}

// countOnce counts a rate limit once, however many requests share it.
type countOnce struct {
	mu   sync.Mutex
	done bool
	res  ratelimit.Result
	err  error
}

// allow returns count's answer, asked the first time only: the later
// requests get the same answer (refused if the first was).
func (c *countOnce) allow(count func() (ratelimit.Result, error)) (ratelimit.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.res, c.err = count()
		c.done = c.err == nil
	}
	return c.res, c.err
}

// WithKey returns ctx carrying k, a key its caller already resolved (the
// dashboard, from its session), for requests served in-process by the API's
// handler: the API acts for k as if its value had been sent, with the same
// permissions and validation. Every request under the returned context counts
// once, together, against the workspace's rate limit: a dashboard page is one
// request of the browser's, however many API calls it makes to be drawn
// (the analytics page makes 14). WithKey on a context that already carries
// k keeps its count. A context value cannot cross the network, so no client
// can set it.
func WithKey(ctx context.Context, k *workspace.APIKey) context.Context {
	if c := inProcessOf(ctx); c != nil && c.key == k {
		return ctx
	}
	return context.WithValue(ctx, inProcess{}, &inProcessCall{key: k, counted: &countOnce{}})
}

func inProcessOf(ctx context.Context) *inProcessCall {
	c, _ := ctx.Value(inProcess{}).(*inProcessCall)
	return c
}

// principalOfKey is the principal of a key resolved in-process: its workspace
// read afresh; a key whose workspace is gone is UNAUTHORIZED.
func (a *API) principalOfKey(ctx context.Context, k *workspace.APIKey) (*principal, error) {
	ws, err := a.store.GetWorkspace(ctx, k.WorkspaceID)
	if fault.Is(err, fault.NotFound) {
		return nil, fault.New(fault.Unauthorized, "invalid API key")
	}
	if err != nil {
		return nil, err
	}
	p := &principal{Workspace: ws, Key: k}
	// A person's session, or a personal key: the audit log names the person.
	p.User, _ = k.Personal()
	return p, nil
}
