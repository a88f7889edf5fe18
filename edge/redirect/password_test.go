package redirect

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"

	"shortlink.dev/shared/bus"
	"shortlink.dev/shared/click"
	"shortlink.dev/shared/config"
)

// cheapParams hash the test passwords: the lockout counts checks, whatever
// they cost.
var cheapParams = &argon2id.Params{Memory: 64, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}

const rightPassword = "correct-horse"

// newPasswordEdge returns an edge serving localhost:8081/vault, protected by
// rightPassword, with the settings env (NAME=value) and the options o.
func newPasswordEdge(t *testing.T, o Options, env ...string) *Edge {
	t.Helper()
	cfg, err := config.Load(func(name string) string {
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v
			}
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	hash, err := argon2id.CreateHash(rightPassword, cheapParams)
	if err != nil {
		t.Fatal(err)
	}
	b := bus.NewMemory(bus.MemoryOptions{})
	go b.Consume(func(context.Context, []click.Event) error { return nil })
	t.Cleanup(func() { b.Close(context.Background()) })
	o.Config, o.Clicks, o.Secret = cfg, b, []byte("test-secret")
	o.Source = mapSource{"localhost:8081/vault": {
		ID: "lnk_vault", WorkspaceID: "ws", Domain: "localhost:8081", Slug: "vault",
		DestinationURL: "https://example.com/vault", Tags: []string{}, PasswordHash: hash,
	}}
	e, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	return e
}

// postPassword posts pw to /vault from ip and returns the response.
func postPassword(e *Edge, ip, pw string, header ...string) *fasthttp.Response {
	var req fasthttp.Request
	req.SetRequestURI("/vault")
	req.Header.SetMethod("POST")
	req.Header.SetHost("localhost:8081")
	req.Header.SetUserAgent(benchUA)
	req.Header.SetContentType("application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	req.SetBodyString(url.Values{"password": {pw}}.Encode())
	ctx := &fasthttp.RequestCtx{}
	ctx.Init(&req, &net.TCPAddr{IP: net.ParseIP(ip), Port: 5555}, nil)
	e.Handle(ctx)
	var resp fasthttp.Response
	ctx.Response.CopyTo(&resp)
	return &resp
}

func TestPasswordBurst(t *testing.T) {
	// 100 wrong tries at once from one client: no more than 10 are ever
	// checked; the others are 429, locked out or shed by the gate.
	e := newPasswordEdge(t, Options{})
	const n = 100
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { statuses <- postPassword(e, "203.0.113.7", fmt.Sprint("guess-", i)).StatusCode() })
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[http.StatusUnauthorized] > PasswordTriesPerClient || count[http.StatusTooManyRequests] < n-PasswordTriesPerClient {
		t.Errorf("%d simultaneous wrong tries: %v, want at most %d × 401 and the rest 429", n, count, PasswordTriesPerClient)
	}
	// Then, one at a time, the client has what the burst left of its 10.
	for i := count[http.StatusUnauthorized]; i < PasswordTriesPerClient; i++ {
		if s := postPassword(e, "203.0.113.7", "guess").StatusCode(); s != http.StatusUnauthorized {
			t.Fatalf("wrong try %d: %d, want 401", i+1, s)
		}
	}
	right := postPassword(e, "203.0.113.7", rightPassword)
	if right.StatusCode() != http.StatusTooManyRequests {
		t.Errorf("the right password after 10 wrong tries: %d, want 429", right.StatusCode())
	}
	if ra, _ := strconv.Atoi(string(right.Header.Peek("Retry-After"))); ra < 2 || ra > 300 {
		t.Errorf("Retry-After %q on the lockout's 429, want what is left of the 300 s window", right.Header.Peek("Retry-After"))
	}
	if got := testutil.ToFloat64(e.metrics.passwordChecks); got != PasswordTriesPerClient {
		t.Errorf("%v passwords checked, want %d", got, PasswordTriesPerClient)
	}
	// Another client is not locked out.
	if s := postPassword(e, "203.0.113.8", rightPassword).StatusCode(); s != http.StatusFound {
		t.Errorf("the right password from another client: %d, want 302", s)
	}
}

func TestPasswordShedTryIsNotCounted(t *testing.T) {
	e := newPasswordEdge(t, Options{})
	e.pwGate.wait = 10 * time.Millisecond
	if !e.pwGate.sem.TryAcquire(e.pwGate.budget) {
		t.Fatal("cannot fill the gate")
	}
	for range 2 * PasswordTriesPerClient {
		if s := postPassword(e, "203.0.113.7", "guess").StatusCode(); s != http.StatusTooManyRequests {
			t.Fatalf("a try while the gate is full: %d, want 429", s)
		}
	}
	e.pwGate.release(gateTicket{weight: e.pwGate.budget}, false)
	if s := postPassword(e, "203.0.113.7", rightPassword).StatusCode(); s != http.StatusFound {
		t.Fatalf("the right password after tries the edge shed: %d, want 302", s)
	}
}

func TestPasswordRightTryIsNoWrongTry(t *testing.T) {
	e := newPasswordEdge(t, Options{})
	for i := range PasswordTriesPerClient - 1 {
		if s := postPassword(e, "203.0.113.7", fmt.Sprint("guess-", i)).StatusCode(); s != http.StatusUnauthorized {
			t.Fatalf("wrong try %d: %d, want 401", i+1, s)
		}
	}
	for range 3 {
		if s := postPassword(e, "203.0.113.7", rightPassword).StatusCode(); s != http.StatusFound {
			t.Fatalf("the right password after %d wrong tries: %d, want 302", PasswordTriesPerClient-1, s)
		}
	}
	if s := postPassword(e, "203.0.113.7", "guess-last").StatusCode(); s != http.StatusUnauthorized {
		t.Fatalf("wrong try %d: %d, want 401", PasswordTriesPerClient, s)
	}
	if s := postPassword(e, "203.0.113.7", rightPassword).StatusCode(); s != http.StatusTooManyRequests {
		t.Fatalf("the right password after %d wrong tries: %d, want 429", PasswordTriesPerClient, s)
	}
}

func TestPasswordLinkCeiling(t *testing.T) {
	// Many clients, each within its own limit, share the link's.
	e := newPasswordEdge(t, Options{})
	clients := PasswordTriesPerLink/PasswordTriesPerClient + 1
	wrong := 0
	for c := range clients {
		ip := fmt.Sprintf("198.51.100.%d", c+1)
		for i := range PasswordTriesPerClient {
			switch s := postPassword(e, ip, fmt.Sprint("guess-", c, i)).StatusCode(); s {
			case http.StatusUnauthorized:
				wrong++
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("client %s, try %d: %d", ip, i+1, s)
			}
		}
	}
	if wrong != PasswordTriesPerLink {
		t.Errorf("%d clients × %d wrong tries: %d answered 401, want %d (the link's ceiling)", clients, PasswordTriesPerClient, wrong, PasswordTriesPerLink)
	}
	if s := postPassword(e, "198.51.100.200", rightPassword).StatusCode(); s != http.StatusTooManyRequests {
		t.Errorf("a new client on a link at its ceiling: %d, want 429", s)
	}
}

func TestPasswordIPv6ClientIsItsSlash64(t *testing.T) {
	e := newPasswordEdge(t, Options{})
	for i := range PasswordTriesPerClient {
		ip := fmt.Sprintf("2001:db8:1:2::%x", i+1) // a new address of one /64 each time
		if s := postPassword(e, ip, "guess").StatusCode(); s != http.StatusUnauthorized {
			t.Fatalf("wrong try %d: %d, want 401", i+1, s)
		}
	}
	if s := postPassword(e, "2001:db8:1:2::ffff", rightPassword).StatusCode(); s != http.StatusTooManyRequests {
		t.Errorf("another address of the same /64: %d, want 429", s)
	}
	if s := postPassword(e, "2001:db8:1:3::1", rightPassword).StatusCode(); s != http.StatusFound {
		t.Errorf("another /64: %d, want 302", s)
	}
}

func TestPasswordTriesSharedAcrossEdges(t *testing.T) {
	shared := newMemTries()
	a := newPasswordEdge(t, Options{Tries: shared})
	b := newPasswordEdge(t, Options{Tries: shared})
	for i := range PasswordTriesPerClient {
		e := a
		if i%2 == 1 {
			e = b
		}
		if s := postPassword(e, "203.0.113.7", "guess").StatusCode(); s != http.StatusUnauthorized {
			t.Fatalf("wrong try %d: %d, want 401", i+1, s)
		}
	}
	for name, e := range map[string]*Edge{"A": a, "B": b} {
		if s := postPassword(e, "203.0.113.7", rightPassword).StatusCode(); s != http.StatusTooManyRequests {
			t.Errorf("edge %s after %d wrong tries over both: %d, want 429", name, PasswordTriesPerClient, s)
		}
	}
}

func TestPasswordGateSheds(t *testing.T) {
	e := newPasswordEdge(t, Options{})
	// Every slot is taken by checks in flight, and as many tries as may
	// wait for room are waiting: a try is turned away at once.
	if !e.pwGate.sem.TryAcquire(e.pwGate.budget) {
		t.Fatal("cannot fill the gate")
	}
	e.pwGate.waiting.Store(gateWaiters)
	e.pwGate.wait = time.Hour
	r := postPassword(e, "203.0.113.7", rightPassword)
	e.pwGate.waiting.Store(0)
	if r.StatusCode() != http.StatusTooManyRequests || string(r.Header.Peek("Retry-After")) != "1" {
		t.Fatalf("a try while the gate is full: %d, Retry-After %q; want 429, 1", r.StatusCode(), r.Header.Peek("Retry-After"))
	}
	if !bytes.Contains(r.Body(), []byte("Busy")) {
		t.Errorf("a try turned away for want of room says %q, want the busy page (not the lockout's)", r.Body())
	}
	if got := testutil.ToFloat64(e.metrics.passwordChecks); got != 0 {
		t.Fatalf("%v passwords checked while the gate was full, want 0", got)
	}
	e.pwGate.release(gateTicket{weight: e.pwGate.budget}, false)
	if s := postPassword(e, "203.0.113.7", rightPassword).StatusCode(); s != http.StatusFound {
		t.Fatalf("the right password once the gate has room: %d, want 302", s)
	}
}

// TestPasswordGateWaits: a try that finds every slot taken waits for one
// (two visitors typing a password at the same time both get in), up to
// gateWait; the wait ends in 429 when no room comes.
func TestPasswordGateWaits(t *testing.T) {
	e := newPasswordEdge(t, Options{})
	if !e.pwGate.sem.TryAcquire(e.pwGate.budget) {
		t.Fatal("cannot fill the gate")
	}
	go func() {
		time.Sleep(50 * time.Millisecond) // a check in flight ends
		e.pwGate.release(gateTicket{weight: e.pwGate.budget}, false)
	}()
	if s := postPassword(e, "203.0.113.7", rightPassword).StatusCode(); s != http.StatusFound {
		t.Fatalf("the right password while another check runs: %d, want 302 once it ends", s)
	}
	if !e.pwGate.sem.TryAcquire(e.pwGate.budget) {
		t.Fatal("cannot fill the gate again")
	}
	e.pwGate.wait = 20 * time.Millisecond
	if s := postPassword(e, "203.0.113.8", rightPassword).StatusCode(); s != http.StatusTooManyRequests {
		t.Fatalf("a try whose wait for room ended: %d, want 429", s)
	}
	if n := e.pwGate.waiting.Load(); n != 0 {
		t.Errorf("%d tries still counted as waiting, want 0", n)
	}
}

func TestPasswordGateWeights(t *testing.T) {
	g := newPasswordGate(64 << 20)
	g.wait = 0
	hash := "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA"
	var n int
	for {
		if _, ok := g.acquire(hash); !ok {
			break
		}
		n++
	}
	// 64 MiB holds three checks of 19 MiB, and never more than maxChecks.
	if want := min(3, int(maxChecks())); n != want {
		t.Errorf("%d checks of m=19456 KiB at once in 64 MiB, want %d", n, want)
	}
	if m := argon2Memory("not a hash"); m < g.budget {
		t.Errorf("an unreadable hash weighs %d KiB, want the whole budget", m)
	}
}
