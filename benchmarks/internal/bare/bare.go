// Package bare is the yardstick of the edge benchmarks: a fasthttp server
// with the edge's server settings whose handler only answers every request
// with the edge's redirect (302, Location, Cache-Control: no-store), deciding
// nothing and recording nothing. What the edge costs beyond it is what the
// product adds to a redirect. cmd/bare302 serves it as a process of its own
// (platformbench), cmd/edgebench in its own process.
package bare

import (
	"log/slog"

	"github.com/valyala/fasthttp"

	"shortlink.dev/edge/redirect"
)

// NewServer is the edge's own fasthttp server (edge/redirect.NewHTTPServer,
// the same settings) around a handler that only writes the 302 to location,
// so that a comparison isolates the edge's handler.
func NewServer(location string, log *slog.Logger) *fasthttp.Server {
	loc := []byte(location)
	headerLocation, headerCacheControl, noStore := []byte("Location"), []byte("Cache-Control"), []byte("no-store")
	return redirect.NewHTTPServer(func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Header.SetCanonical(headerLocation, loc)
		ctx.Response.Header.SetCanonical(headerCacheControl, noStore)
		ctx.SetStatusCode(fasthttp.StatusFound)
	}, log)
}
