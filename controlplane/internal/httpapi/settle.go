package httpapi

import (
	"net/http"
	"sync"
)

// settle makes a request that changed links, galleries or domains answer
// only once the edges forgot what it changed, as they did when the API
// published its changes itself: its writes store their changes in the
// change outbox (bus.WithChanges), the relay publishes them, and the
// answer waits, before its first byte, until the relay published them all
// (with Kafka: and every edge acknowledged them), or for the relay's bound
// when the broker is away; the changes stay stored and go out when it
// returns. One place for every route: handlers and services know nothing
// of it.
func (a *API) settle(next http.Handler) http.Handler {
	if a.relay == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, t := a.relay.Track(r.Context())
		sw := &settlingWriter{ResponseWriter: w}
		sw.wait = func() {
			if t.Stored() > 0 && !t.Wait(ctx) {
				a.log.WarnContext(ctx, "answering before the edges confirmed the request's link changes; they wait in the change outbox",
					"request_id", requestID(ctx), "changes", t.Stored())
			}
		}
		next.ServeHTTP(sw, r.WithContext(ctx))
		sw.settle()
	})
}

// settlingWriter waits for the request's changes before the answer's first
// byte (its status line) leaves.
type settlingWriter struct {
	http.ResponseWriter
	once sync.Once
	wait func()
}

func (s *settlingWriter) settle() { s.once.Do(s.wait) }

func (s *settlingWriter) WriteHeader(code int) {
	s.settle()
	s.ResponseWriter.WriteHeader(code)
}

func (s *settlingWriter) Write(b []byte) (int, error) {
	s.settle()
	return s.ResponseWriter.Write(b)
}

// Flush waits too: a flush sends the status line.
func (s *settlingWriter) Flush() {
	s.settle()
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *settlingWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
