package redirect

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/valyala/fasthttp"

	"shortlink.dev/edge/internal/page"
	"shortlink.dev/edge/internal/route"
	"shortlink.dev/shared/clientip"
	"shortlink.dev/shared/link"
)

// unlock handles a password-protected link without a valid unlock cookie. It
// reports true when the request carried the right password (the redirect goes
// on); otherwise it has answered with the form, or 429 after too many wrong
// tries or while the edge checks as many passwords as it may at once.
func (e *Edge) unlock(ctx *fasthttp.RequestCtx, l route.Link, now time.Time) bool {
	if !ctx.IsPost() {
		e.page(ctx, fasthttp.StatusUnauthorized, page.Password, e.metrics.password)
		return false
	}
	pw := ctx.PostArgs().Peek("password")
	check := len(pw) > 0 && len(pw) <= 4*link.MaxPasswordLen
	var ticket gateTicket
	if check {
		// Room first: a flood beyond what the edge checks at once (and the
		// few tries that may wait for it) is answered at once, without even
		// a count in the store; such a try is not counted (it was not checked).
		var admitted bool
		if ticket, admitted = e.pwGate.acquire(l.PasswordHash()); !admitted {
			e.metrics.passwordShed.Inc()
			ctx.Response.Header.Set("Retry-After", "1")
			e.page(ctx, fasthttp.StatusTooManyRequests, page.Busy, e.metrics.tooMany)
			return false
		}
	}
	// The try is counted before the password is checked, and stays counted
	// unless it was right: however many arrive at once, no more are checked
	// than the lockout allows.
	res, wait, err := e.reserveTry(storeCtx, l.ID(), e.clientIP(ctx), now)
	if err != nil || wait > 0 {
		if check {
			e.pwGate.release(ticket, false)
		}
		if err != nil {
			e.log.Error("cannot count a password try", "link", l.ID(), "err", err)
			ctx.Response.Header.Set("Retry-After", "5")
			e.page(ctx, fasthttp.StatusServiceUnavailable, page.Unavailable, e.metrics.failed)
			return false
		}
		ctx.Response.Header.Set("Retry-After", retryAfter(wait))
		e.page(ctx, fasthttp.StatusTooManyRequests, page.TooMany, e.metrics.tooMany)
		return false
	}
	ok := false
	if check {
		e.metrics.passwordChecks.Inc()
		ok, _ = argon2id.ComparePasswordAndHash(string(pw), l.PasswordHash())
		e.pwGate.release(ticket, true)
	}
	if !ok {
		e.page(ctx, fasthttp.StatusUnauthorized, page.WrongPassword, e.metrics.password)
		return false
	}
	e.giveBack(res)
	e.cookie.set(ctx, l, now, e.secureRequest(ctx))
	return true
}

// unlockTTL is how long a right password keeps a link open in that browser.
const unlockTTL = 24 * time.Hour

// cookieSigner makes and checks the unlock cookie of a password-protected link:
// "expiry.signature", the signature an HMAC of the link id, the expiry and the
// password hash, so a new password locks every browser out again.
type cookieSigner struct{ key []byte }

func cookieName(l route.Link) string { return "sl_unlock_" + l.ID() }

func (s cookieSigner) sign(l route.Link, exp int64) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(l.ID()))
	m.Write([]byte{0})
	m.Write([]byte(strconv.FormatInt(exp, 10)))
	m.Write([]byte{0})
	m.Write([]byte(l.PasswordHash()))
	return hex.EncodeToString(m.Sum(nil))
}

// set gives the visitor the unlock cookie; secure marks it Secure, for
// visitors on https, whose browser then never sends it over plain http.
func (s cookieSigner) set(ctx *fasthttp.RequestCtx, l route.Link, now time.Time, secure bool) {
	exp := now.Add(unlockTTL).Unix()
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(cookieName(l))
	c.SetValue(strconv.FormatInt(exp, 10) + "." + s.sign(l, exp))
	c.SetPath("/" + l.Slug())
	c.SetMaxAge(int(unlockTTL / time.Second))
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	c.SetSecure(secure)
	ctx.Response.Header.SetCookie(c)
}

func (s cookieSigner) valid(ctx *fasthttp.RequestCtx, l route.Link, now time.Time) bool {
	v := ctx.Request.Header.Cookie(cookieName(l))
	if len(v) == 0 {
		return false
	}
	expS, sig, ok := strings.Cut(string(v), ".")
	exp, err := strconv.ParseInt(expS, 10, 64)
	if !ok || err != nil || exp < now.Unix() {
		return false
	}
	return hmac.Equal([]byte(sig), []byte(s.sign(l, exp)))
}

// The password lockout (CONTRACT §5): a client gets at most PasswordTriesPerClient
// tries of a link's password in PasswordWindow, and a link at most
// PasswordTriesPerLink over all clients, which slows a guess spread over many
// addresses. A try is reserved before its password is checked, so requests
// that arrive together cannot all pass the count; a right password gives its
// reservation back.
const (
	PasswordTriesPerClient = 10
	PasswordTriesPerLink   = 100
	PasswordWindow         = 5 * time.Minute
)

// TryStore counts password tries in windows, per key. Every edge of a
// deployment must share one for the lockout to hold across edges
// (sqlstore.Store is one); the default is in-process.
type TryStore interface {
	// TakeTry counts a try of key at now and returns the tries counted in
	// key's window, this one included, and when that window started: a
	// window starts at the first try after the previous one ended. It must
	// be atomic: concurrent calls never return the same count.
	TakeTry(ctx context.Context, key string, now time.Time, window time.Duration) (int64, time.Time, error)
	// GiveBackTry uncounts a try taken in the window that started at start;
	// in a later window it does nothing.
	GiveBackTry(ctx context.Context, key string, start time.Time) error
	// DeleteTriesBefore forgets the windows that started before t.
	DeleteTriesBefore(ctx context.Context, t time.Time) error
}

// tryLimits are the lockout's numbers.
type tryLimits struct {
	perClient, perLink int64
	window             time.Duration
}

var defaultTryLimits = tryLimits{PasswordTriesPerClient, PasswordTriesPerLink, PasswordWindow}

// reservation is a password try taken before the check: the windows it
// was counted in, to give it back.
type reservation struct {
	clientKey, linkKey     string
	clientStart, linkStart time.Time
}

// reserveTry takes a try of client on link. When it refuses (wait > 0), wait is
// how long until the window that refused it ends.
func (e *Edge) reserveTry(ctx context.Context, linkID string, client netip.Addr, now time.Time) (r reservation, wait time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	lim := e.tryLimits
	r.clientKey, r.linkKey = linkID+"|"+clientip.Key(client), linkID+"|*"
	n, start, err := e.tries.TakeTry(ctx, r.clientKey, now, lim.window)
	if err != nil {
		return r, 0, err
	}
	r.clientStart = start
	if n > lim.perClient {
		return r, until(start.Add(lim.window), now), nil
	}
	if n, start, err = e.tries.TakeTry(ctx, r.linkKey, now, lim.window); err != nil {
		return r, 0, err
	}
	r.linkStart = start
	if n > lim.perLink {
		return r, until(start.Add(lim.window), now), nil
	}
	return r, 0, nil
}

// giveBack uncounts a reserved try whose password was right.
func (e *Edge) giveBack(r reservation) {
	ctx, cancel := context.WithTimeout(storeCtx, loadTimeout)
	defer cancel()
	err := errors.Join(e.tries.GiveBackTry(ctx, r.clientKey, r.clientStart), e.tries.GiveBackTry(ctx, r.linkKey, r.linkStart))
	if err != nil {
		e.log.Warn("cannot give back a password try", "err", err)
	}
}

// pruneTries forgets ended windows every minute until stop is closed.
func (e *Edge) pruneTries(stop <-chan struct{}) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(storeCtx, loadTimeout)
		if err := e.tries.DeleteTriesBefore(ctx, e.now().Add(-e.tryLimits.window)); err != nil {
			e.log.Warn("cannot delete old password tries", "err", err)
		}
		cancel()
	}
}

// until is the whole seconds from now to t, at least one.
func until(t, now time.Time) time.Duration {
	d := t.Sub(now).Round(time.Second)
	if d < time.Second {
		d = time.Second
	}
	return d
}

// retryAfter is d as a Retry-After value.
func retryAfter(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

// memTries is the in-process TryStore: for one edge.
type memTries struct {
	mu sync.Mutex
	m  map[string]tries
}

type tries struct {
	n     int64
	start time.Time
}

// maxMemTries bounds the keys memTries holds (about 150 bytes each): past it,
// and once ended windows are dropped, a try of a new key is refused, as if
// its window were full, rather than grow without end under a flood of
// client addresses.
const maxMemTries = 100_000

func newMemTries() *memTries { return &memTries{m: map[string]tries{}} }

func (t *memTries) TakeTry(_ context.Context, key string, now time.Time, window time.Duration) (int64, time.Time, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[key]
	if !ok && len(t.m) >= maxMemTries {
		t.deleteBefore(now.Add(-window))
		if len(t.m) >= maxMemTries {
			return 1 << 62, now, nil
		}
	}
	if !ok || !v.start.After(now.Add(-window)) {
		v = tries{start: now}
	}
	v.n++
	t.m[key] = v
	return v.n, v.start, nil
}

func (t *memTries) GiveBackTry(_ context.Context, key string, start time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.m[key]; ok && v.start.Equal(start) && v.n > 0 {
		v.n--
		t.m[key] = v
	}
	return nil
}

func (t *memTries) DeleteTriesBefore(_ context.Context, before time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deleteBefore(before)
	return nil
}

func (t *memTries) deleteBefore(before time.Time) {
	for k, v := range t.m {
		if !v.start.After(before) {
			delete(t.m, k)
		}
	}
}
