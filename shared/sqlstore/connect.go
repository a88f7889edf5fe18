package sqlstore

import (
	"net/url"
	"strconv"
	"time"
)

// connectTimeout bounds each new connection to PostgreSQL, TCP and startup
// alike, when SHORTLINK_DATABASE_URL sets no connect_timeout. Without it a
// server that takes the TCP connection and never answers (a host gone, a
// half-dead server) holds every request that needs a new connection for as
// long as the client waits; with it the API answers 503 within the bound.
const connectTimeout = 5 * time.Second

// withConnectTimeout returns the URL with connect_timeout set to
// connectTimeout unless it sets one; a DSN that is not a URL (key=value
// words) is returned as it is.
func withConnectTimeout(databaseURL string) string {
	u, err := url.Parse(databaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return databaseURL
	}
	q := u.Query()
	if q.Has("connect_timeout") {
		return databaseURL
	}
	q.Set("connect_timeout", strconv.Itoa(int(connectTimeout/time.Second)))
	u.RawQuery = q.Encode()
	return u.String()
}
