package bare

import (
	"log/slog"
	"net"
	"net/http"
	"testing"
)

// TestAnswersEveryRequestWithTheRedirect: the edge's redirect, headers and all
// (the edge's server is named "shortlink" too).
func TestAnswersEveryRequestWithTheRedirect(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer("https://example.com/landing?a=1", slog.Default())
	go srv.Serve(ln)
	defer srv.Shutdown()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/bench", "/m123", "/"} {
		resp, err := client.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "https://example.com/landing?a=1" ||
			resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Server") != "shortlink" {
			t.Errorf("GET %s: %d %v", path, resp.StatusCode, resp.Header)
		}
	}
}
