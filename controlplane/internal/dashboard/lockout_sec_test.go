package dashboard_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"shortlink.dev/shared/workspace"
)

// signInFrom tries email and password from the client address ip (the
// test server trusts 127.0.0.1's X-Forwarded-For) and returns the status.
func signInFrom(t *testing.T, b *browser, ip, email, password string) int {
	t.Helper()
	csrf := csrfOf(t, b.get("/"))
	return b.do("POST", "/signin", url.Values{"email": {email}, "password": {password}, "csrf": {csrf}}, "X-Forwarded-For", ip).status
}

// A stranger cannot lock a person out: wrong passwords lock the stranger's
// address (5, even all at once), then with many addresses the account's
// unknown sources (its ceiling, exact under concurrency), never a browser
// where the person signed in before.
func TestMemberSecLockoutStrangerCannotLockOwner(t *testing.T) {
	e := newEnv(t, "SHORTLINK_TRUSTED_PROXIES=127.0.0.1/32,::1/128")
	_, ownerKey := e.key(t)
	owner := e.browser(t)
	owner.signIn(ownerKey)
	const email, right = "lee@example.com", "lee's long password"
	joined, _ := join(t, e, invite(t, owner, email, "member"), "Lee", right)
	join(t, e, invite(t, owner, "sam@example.com", "member"), "Sam", "sam's long password")

	// Lee signs in on their laptop: it becomes a known device.
	laptop := e.browser(t)
	wantStatus(t, "lee on the laptop", page{status: signInFrom(t, laptop, "198.51.100.7", email, right)}, http.StatusSeeOther)

	// A stranger at one address: 8 wrong passwords at once, 5 checked.
	codes := make([]int, 8)
	var wg sync.WaitGroup
	for i := range codes {
		b := e.browser(t)
		csrf := csrfOf(t, b.get("/"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = b.do("POST", "/signin", url.Values{"email": {email}, "password": {"guess"}, "csrf": {csrf}}, "X-Forwarded-For", "203.0.113.1").status
		}()
	}
	wg.Wait()
	if n := count(codes, http.StatusUnauthorized); n != workspace.MaxPasswordFailures || count(codes, http.StatusTooManyRequests) != len(codes)-n {
		t.Fatalf("one address's concurrent wrong passwords: %v", codes)
	}
	// Lee, from another address and a new browser, is not locked out.
	if c := signInFrom(t, e.browser(t), "198.51.100.9", email, right); c != http.StatusSeeOther {
		t.Fatalf("lee from another address after a stranger's 5 tries: %d", c)
	}

	// The stranger with many addresses: the account's ceiling holds,
	// exactly, under concurrency (5 wrong counted so far).
	tries := workspace.MaxAccountPasswordFailures + 5
	codes = make([]int, tries)
	for i := range codes {
		b := e.browser(t)
		csrf := csrfOf(t, b.get("/"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = b.do("POST", "/signin", url.Values{"email": {email}, "password": {fmt.Sprint("guess ", i)}, "csrf": {csrf}},
				"X-Forwarded-For", fmt.Sprintf("203.0.%d.%d", 114+i/200, 1+i%200)).status
		}()
	}
	wg.Wait()
	if n := count(codes, http.StatusUnauthorized); n != workspace.MaxAccountPasswordFailures-workspace.MaxPasswordFailures {
		t.Fatalf("%d wrong passwords checked from many addresses, want %d (the ceiling): %v", n,
			workspace.MaxAccountPasswordFailures-workspace.MaxPasswordFailures, codes)
	}
	// Now unknown sources are refused, Lee's right password too, and a
	// device cookie of another account (Sam's) is no key to Lee's.
	if c := signInFrom(t, e.browser(t), "198.51.100.10", email, right); c != http.StatusTooManyRequests {
		t.Fatalf("an unknown source past the ceiling: %d", c)
	}
	sams := e.browser(t)
	wantStatus(t, "sam signs in", page{status: signInFrom(t, sams, "198.51.100.11", "sam@example.com", "sam's long password")}, http.StatusSeeOther)
	dropSession(t, e, sams)
	if c := signInFrom(t, sams, "198.51.100.11", email, right); c != http.StatusTooManyRequests {
		t.Fatalf("Sam's browser (device of another account) past the ceiling: %d", c)
	}
	// Lee's laptop still signs in, from anywhere.
	dropSession(t, e, laptop)
	// So does the browser Lee joined with.
	dropSession(t, e, joined)
	if c := signInFrom(t, joined, "192.0.2.201", email, right); c != http.StatusSeeOther {
		t.Fatalf("the browser lee joined with, past the ceiling: %d", c)
	}
	p := laptop.do("POST", "/signin", url.Values{"email": {email}, "password": {right}, "csrf": {csrfOf(t, laptop.get("/"))}}, "X-Forwarded-For", "192.0.2.200")
	if p.status != http.StatusSeeOther {
		t.Fatalf("lee's known laptop past the ceiling: %d %s", p.status, p.body)
	}
	// A forged device cookie is not one.
	forged := e.browser(t)
	u, _ := url.Parse(e.srv.URL)
	forged.client.Jar.SetCookies(u, []*http.Cookie{{Name: "sl_device", Value: "bGVlQGV4YW1wbGUuY29t.abc.forged", Path: "/"}})
	if c := signInFrom(t, forged, "198.51.100.12", email, right); c != http.StatusTooManyRequests {
		t.Fatalf("a forged device cookie past the ceiling: %d", c)
	}
	if !strings.Contains(laptop.get("/members").body, "Lee") {
		t.Fatal("lee's laptop session does not work")
	}
}

// dropSession forgets the browser's session cookie (its other cookies stay).
func dropSession(t *testing.T, e *env, b *browser) {
	t.Helper()
	u, _ := url.Parse(e.srv.URL)
	b.client.Jar.SetCookies(u, []*http.Cookie{{Name: "sl_session", Value: "", Path: "/", MaxAge: -1}})
}

func count(codes []int, c int) int {
	n := 0
	for _, x := range codes {
		if x == c {
			n++
		}
	}
	return n
}
