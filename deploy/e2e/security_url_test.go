package e2e

// Attacks on the URL fields of a link (issue 18, points 2 and 3): a target
// that loops back to the service in any spelling a browser understands, and
// URLs that go out in Location as browsers expect them (punycode hosts,
// percent-encoded paths and queries) or are refused when no browser can
// reach their host.

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// urlSecDefaultDomain is the default domain of urlSecStart's server: a name
// that is not the edge's address, so that only the edge-listener rule can
// refuse a loopback spelling of the edge.
const urlSecDefaultDomain = "urlsec.example.com"

// urlSecStart starts a server whose edge listens on a free port of host
// (SHORTLINK_EDGE_ADDR; "127.0.0.1", or "0.0.0.0" for all interfaces) and
// whose default domain is urlSecDefaultDomain, and returns it with the
// edge's port.
func urlSecStart(t *testing.T, host string, settings ...string) (*Server, string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		s, err := launchServer(t, t.TempDir(), append([]string{
			"SHORTLINK_EDGE_ADDR=" + net.JoinHostPort(host, port), "SHORTLINK_DEFAULT_DOMAIN=" + urlSecDefaultDomain,
		}, settings...)...)
		if err == nil {
			if host == "127.0.0.1" && s.EdgeBase != "http://127.0.0.1:"+port+"/" {
				t.Fatalf("banner: edge %q, want http://127.0.0.1:%s/", s.EdgeBase, port)
			}
			return s, port
		}
		if attempt < 4 && strings.Contains(err.Error(), "address already in use") {
			continue
		}
		t.Fatal(err)
	}
}

// urlSecFields are the URL fields of a link, each with the body that sets it
// to u (destinationUrl being valid where it is not the field under test).
var urlSecFields = []struct {
	name string
	body func(u string) obj
}{
	{"destinationUrl", func(u string) obj { return obj{"destinationUrl": u} }},
	{"geoTargets", func(u string) obj { return obj{"geoTargets": obj{"DE": u}} }},
	{"deviceTargets", func(u string) obj { return obj{"deviceTargets": obj{"mobile": u}} }},
	{"expiredUrl", func(u string) obj { return obj{"expiredUrl": u} }},
	{"iosUrl", func(u string) obj { return obj{"iosUrl": u} }},
	{"androidUrl", func(u string) obj { return obj{"androidUrl": u} }},
}

// urlSecCode is the error code of an invalid URL in field (CONTRACT §4).
func urlSecCode(field string) string {
	if field == "destinationUrl" {
		return "INVALID_URL"
	}
	return "VALIDATION_ERROR"
}

// urlSecCreateBody is the POST /links body that sets field to u.
func urlSecCreateBody(field, u string, body func(string) obj) obj {
	b := body(u)
	if field != "destinationUrl" {
		b["destinationUrl"] = "https://example.com/ok"
	}
	return b
}

// urlSecRefused reports (without stopping the test) unless r is a 400 with
// code naming field in details.fields.
func urlSecRefused(t *testing.T, what string, r *Response, code, field string) {
	t.Helper()
	var env struct {
		Success bool       `json:"success"`
		Error   *ErrorBody `json:"error"`
	}
	if r.Status != http.StatusBadRequest || json.Unmarshal(r.Body, &env) != nil || env.Success || env.Error == nil {
		t.Errorf("%s: %s, want 400 %s", what, r, code)
		return
	}
	urlSecItemRefused(t, what, env.Error, code, field)
}

// urlSecItemRefused reports unless e is code naming field.
func urlSecItemRefused(t *testing.T, what string, e *ErrorBody, code, field string) {
	t.Helper()
	if e == nil || e.Code != code {
		t.Errorf("%s: error %+v, want %s", what, e, code)
		return
	}
	if msg, ok := e.Fields()[field].(string); !ok || msg == "" {
		t.Errorf("%s: error %+v does not name %s in details.fields", what, e, field)
	}
}

func TestSecurityURL(t *testing.T) {
	needBinary(t)
	t.Parallel()
	zone := startTXTZone(t)
	s, port := urlSecStart(t, "127.0.0.1", "SHORTLINK_DNS_RESOLVER="+zone.Addr)
	tg := s.Target
	w := tg.NewWorkspace(t, "enterprise")

	// A verified custom domain with an internationalised name.
	unicodeName := "bücher-" + randomSlug() + ".example.com"
	d := tg.createDomain(t, w.Key, unicodeName)
	if !strings.HasPrefix(d.Name, "xn--") {
		t.Fatalf("custom domain %q stored as %q, want punycode", unicodeName, d.Name)
	}
	zone.Set(d.Verification.Name, d.Verification.Value)
	if v := tg.verifyDomain(t, w.Key, d.ID); !v.Verified {
		t.Fatalf("custom domain not verified: %+v", v)
	}

	t.Run("Loops", func(t *testing.T) {
		p := ":" + port
		loops := []string{
			// The edge's listener: loopback hosts on its port, as browsers read them.
			"http://127.0.0.1" + p + "/x",
			"http://127.1" + p + "/x",
			"http://0x7f000001" + p + "/x",
			"http://2130706433" + p + "/x",
			"http://0177.0.0.1" + p + "/x",
			"http://0x7f.1" + p + "/x",
			"http://[::ffff:127.0.0.1]" + p + "/x",
			"http://[::1]" + p + "/x",
			"http://[::]" + p + "/x",
			"http://0.0.0.0" + p + "/x",
			"http://127.0.0.2" + p + "/x",
			"http://127.0.0.1." + p + "/x",
			"http://localhost" + p + "/x",
			"http://LOCALHOST." + p + "/x",
			"http://foo.localhost" + p + "/x",
			"http://１２７.０.０.１" + p + "/x",
			"http://%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1" + p + "/x",
			"http://127.0.0.1:0" + port + "/x",
			"https://localhost" + p + "/x",
			// The default domain.
			"https://URLSEC.example.com./x",
			"http://urlsec.example.com:80/x",
			"http://urlsec.example.com:8080/x",
			// The verified custom domain, in Unicode, upper case, punycode, on any port.
			"https://" + unicodeName + "/x",
			"https://" + strings.ToUpper(unicodeName) + "/x",
			"https://" + d.Name + ":8443/x",
			"https://" + d.Name + "./x",
			"http://" + strings.ToUpper(d.Name) + ":80/x",
		}
		base := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/base"})
		for _, u := range loops {
			for _, f := range urlSecFields {
				code := urlSecCode(f.name)
				r := tg.API(t, w.Key, "POST", "/links", urlSecCreateBody(f.name, u, f.body))
				urlSecRefused(t, "POST /links "+f.name+"="+u, r, code, f.name)
				r = tg.API(t, w.Key, "PATCH", "/links/"+base.ID, f.body(u))
				urlSecRefused(t, "PATCH /links "+f.name+"="+u, r, code, f.name)
			}
			var items []any
			for _, f := range urlSecFields {
				items = append(items, urlSecCreateBody(f.name, u, f.body))
			}
			r := tg.post(t, w.Key, "", "/links/bulk", items)
			if r.Status != http.StatusOK {
				t.Errorf("POST /links/bulk with %s: %s, want 200", u, r)
				continue
			}
			var got []BulkItem
			r.Data(t, &got)
			if len(got) != len(urlSecFields) {
				t.Fatalf("%s: %d items, want %d", r, len(got), len(urlSecFields))
			}
			for i, f := range urlSecFields {
				if got[i].Success {
					t.Errorf("POST /links/bulk %s=%s: created", f.name, u)
					continue
				}
				urlSecItemRefused(t, "POST /links/bulk "+f.name+"="+u, got[i].Error, urlSecCode(f.name), f.name)
			}
		}
		if got := tg.getLink(t, w.Key, base.ID); got.DestinationURL != base.DestinationURL || got.UpdatedAt != base.UpdatedAt {
			t.Errorf("the refused PATCHes changed the link: %+v, was %+v", got, base)
		}

		// What is not the service stays allowed in every field: loopback on
		// another port, a sub-domain of a short domain.
		for _, u := range []string{"http://127.0.0.1:" + freePort(t) + "/x", "https://www." + d.Name + "/x"} {
			for _, f := range urlSecFields {
				r := tg.API(t, w.Key, "POST", "/links", urlSecCreateBody(f.name, u, f.body))
				if r.Status != http.StatusCreated {
					t.Errorf("POST /links %s=%s: %s, want 201", f.name, u, r)
				}
			}
		}
	})

	t.Run("Location", func(t *testing.T) {
		const (
			idn  = "https://bücher.example/straße?q=ä"
			want = "https://xn--bcher-kva.example/stra%C3%9Fe?q=%C3%A4"
		)
		l := tg.createLink(t, w.Key, obj{"destinationUrl": idn, "expiredUrl": idn,
			"geoTargets": obj{"DE": idn}, "deviceTargets": obj{"tablet": idn}, "androidUrl": idn})
		if l.DestinationURL != want || l.ExpiredURL == nil || *l.ExpiredURL != want ||
			l.GeoTargets["DE"] != want || l.DeviceTargets["tablet"] != want || l.AndroidURL == nil || *l.AndroidURL != want {
			t.Fatalf("created %+v, want every URL field %s", l, want)
		}
		if got := tg.getLink(t, w.Key, l.ID); got.DestinationURL != want {
			t.Fatalf("GET: destinationUrl %q, want %q", got.DestinationURL, want)
		}
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, nil, nil), want)
		wantRedirect(t, tg.Edge(t, "GET", l.Slug+"?x=%C3%BC&y=1", nil, nil), want+"&x=%C3%BC&y=1")
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, ua(uaPixel), nil), want)

		// PATCH and bulk store the same form.
		l = decodeLink(t, tg.API(t, w.Key, "PATCH", "/links/"+l.ID, obj{"destinationUrl": "https://MÜNCHEN.example/ä#ö"}).wantSuccess(t, http.StatusOK))
		if l.DestinationURL != "https://xn--mnchen-3ya.example/%C3%A4#%C3%B6" {
			t.Fatalf("PATCH: destinationUrl %q", l.DestinationURL)
		}
		wantRedirect(t, tg.Edge(t, "GET", l.Slug, nil, nil), "https://xn--mnchen-3ya.example/%C3%A4#%C3%B6")
		r := tg.post(t, w.Key, "", "/links/bulk", []any{obj{"destinationUrl": idn}}).wantSuccess(t, http.StatusOK)
		var items []BulkItem
		r.Data(t, &items)
		var bl struct {
			DestinationURL string `json:"destinationUrl"`
		}
		if len(items) != 1 || !items[0].Success || json.Unmarshal(items[0].Data, &bl) != nil || bl.DestinationURL != want {
			t.Fatalf("bulk: %s, want destinationUrl %s", r, want)
		}

		// A plain ASCII URL is stored byte for byte, an existing %XX kept.
		for _, u := range []string{"HTTPS://Example.COM/A?b=1&a=2#F", "https://example.com/caf%C3%A9?q=%20&r=%zz"} {
			if got := tg.createLink(t, w.Key, obj{"destinationUrl": u}); got.DestinationURL != u {
				t.Errorf("destinationUrl %q stored as %q", u, got.DestinationURL)
			}
		}
	})

	t.Run("BrowserLinks", func(t *testing.T) {
		// App links that make a browser open a page are read as that page.
		enc := func(u string) string { return strings.NewReplacer(":", "%3A", "/", "%2F").Replace(u) }
		loops := []string{
			"intent://" + d.Name + "/x#Intent;scheme=https;end",
			"intent://127.1:" + port + "/x#Intent;scheme=http;package=com.example.app;end",
			"intent:#Intent;package=com.example.none;S.browser_fallback_url=" + enc("https://"+unicodeName+"/x") + ";end",
			"x-safari-https://URLSEC.example.com/x",
			"googlechromes://" + d.Name + "/x",
			"googlechrome://localhost:" + port + "/x",
			"microsoft-edge-https://" + d.Name + "/x",
			"microsoft-edge-http://0x7f000001:" + port + "/x",
			"microsoft-edge:https://" + d.Name + "/x",
			"firefox://open-url?url=" + enc("https://"+d.Name+"/x"),
			"brave://open-url?url=" + enc("http://[::1]:"+port+"/"),
			"opera-https://urlsec.example.com/x",
		}
		for _, u := range loops {
			for _, f := range urlSecFields[4:] {
				r := tg.API(t, w.Key, "POST", "/links", urlSecCreateBody(f.name, u, f.body))
				urlSecRefused(t, "POST /links "+f.name+"="+u, r, "VALIDATION_ERROR", f.name)
			}
		}
		// Those that open another page are kept byte for byte.
		for _, u := range []string{
			"intent://example.com/x#Intent;scheme=https;package=com.example.app;end",
			"googlechromes://example.com/X?a=1", "firefox://open-url?url=" + enc("https://example.com/"),
		} {
			l := tg.createLink(t, w.Key, obj{"destinationUrl": "https://example.com/ok", "iosUrl": u, "androidUrl": u})
			if l.IOSURL == nil || *l.IOSURL != u || l.AndroidURL == nil || *l.AndroidURL != u {
				t.Errorf("%s stored as %v, %v", u, l.IOSURL, l.AndroidURL)
			}
		}
	})

	t.Run("UnreachableHosts", func(t *testing.T) {
		for _, u := range []string{
			"https://-bad-.com/", "https://a..b.com/", "https://.com/", "https://xn--zz.com/",
			"https://" + strings.Repeat("a", 64) + ".com/",
			"https://" + strings.Repeat(strings.Repeat("a", 63)+".", 4) + "com/",
			"https://a!b.com/", "https://foo.09/",
		} {
			for _, f := range urlSecFields {
				r := tg.API(t, w.Key, "POST", "/links", urlSecCreateBody(f.name, u, f.body))
				urlSecRefused(t, "POST /links "+f.name+"="+u, r, urlSecCode(f.name), f.name)
			}
		}
	})
}

// TestSecurityURLEdgeOnPortZero: the standalone binary started with
// SHORTLINK_EDGE_ADDR on port 0 (as the harness does) refuses a loopback
// spelling of the port its edge really took. The split control plane cannot
// know the port an edge of its own picked, so this is the standalone's alone
// (docs/security.md, known limits).
func TestSecurityURLEdgeOnPortZero(t *testing.T) {
	needBinary(t)
	if splitShape {
		t.Skip("standalone only: a split control plane is told SHORTLINK_EDGE_ADDR, it cannot see an edge's port 0")
	}
	tg := newTarget(t, "SHORTLINK_DEFAULT_DOMAIN="+urlSecDefaultDomain)
	port := strings.TrimSuffix(tg.EdgeBase[strings.LastIndex(tg.EdgeBase, ":")+1:], "/")
	w := tg.NewWorkspace(t, "enterprise")
	for _, u := range []string{"http://127.1:" + port + "/x", "http://0x7f000001:" + port + "/x", "http://localhost:" + port + "/x"} {
		r := tg.API(t, w.Key, http.MethodPost, "/links", obj{"destinationUrl": u})
		urlSecRefused(t, u, r, "INVALID_URL", "destinationUrl")
	}
	tg.API(t, w.Key, http.MethodPost, "/links", obj{"destinationUrl": "http://127.1:1/x"}).wantSuccess(t, http.StatusCreated)
}

// TestSecurityURLEdgeOnAllInterfaces: an edge listening on all interfaces
// (SHORTLINK_EDGE_ADDR=0.0.0.0:PORT) answers on every address of the
// machine; each is refused on its port, in any spelling.
func TestSecurityURLEdgeOnAllInterfaces(t *testing.T) {
	needBinary(t)
	t.Parallel()
	var addrs []netip.Addr
	ifAddrs, _ := net.InterfaceAddrs()
	for _, ia := range ifAddrs {
		if n, ok := ia.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok && !a.IsLoopback() && !a.IsLinkLocalUnicast() {
				addrs = append(addrs, a.Unmap())
			}
		}
	}
	if len(addrs) == 0 {
		t.Skip("this machine has no address but loopback and link-local")
	}
	s, port := urlSecStart(t, "0.0.0.0")
	w := s.NewWorkspace(t, "pro")
	for _, a := range addrs {
		us := []string{"http://[" + a.String() + "]:" + port + "/x"}
		if a.Is4() {
			b := a.As4()
			us = []string{"http://" + a.String() + ":" + port + "/x",
				fmt.Sprintf("http://0x%02x%02x%02x%02x:%s/x", b[0], b[1], b[2], b[3], port),
				"http://[::ffff:" + a.String() + "]:" + port + "/x"}
		}
		for _, u := range us {
			r := s.API(t, w.Key, http.MethodPost, "/links", obj{"destinationUrl": u})
			urlSecRefused(t, u, r, "INVALID_URL", "destinationUrl")
			r = s.API(t, w.Key, http.MethodPost, "/links", obj{"destinationUrl": "https://example.com/", "iosUrl": "x-safari-" + u})
			urlSecRefused(t, "iosUrl x-safari-"+u, r, "VALIDATION_ERROR", "iosUrl")
		}
	}
	other := "http://" + netip.AddrPortFrom(addrs[0], 1).String() + "/x"
	s.API(t, w.Key, http.MethodPost, "/links", obj{"destinationUrl": other}).wantSuccess(t, http.StatusCreated)
}
