package server

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

// A request's headers are bounded at 64 KiB (net/http's default is 1 MiB,
// and a user agent that long was copied into every audit entry of a bulk
// change): more is 431, less is served.
func TestHeadersAreBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	for _, c := range []struct {
		size, want int
	}{{32 << 10, http.StatusOK}, {200 << 10, http.StatusRequestHeaderFieldsTooLarge}} {
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/", nil)
		req.Header.Set("User-Agent", strings.Repeat("a", c.size))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("a %d KiB user agent: %d, want %d", c.size>>10, res.StatusCode, c.want)
		}
	}
}
