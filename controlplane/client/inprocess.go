package client

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// WithHandler sends every request to h in process, without a network: for
// a server that calls its own API (the dashboard does, with h wrapping the
// API's handler) and for tests. The request h receives looks like one a
// server read: its URL holds the path and query only, RequestURI is set and
// the body is never nil. Any http.Client set by WithHTTPClient is replaced.
func WithHandler(h http.Handler) Option {
	return func(c *Client) { c.http = &http.Client{Transport: handlerTransport{h}} }
}

// handlerTransport serves requests with a handler and returns what it wrote.
type handlerTransport struct{ h http.Handler }

// RoundTrip implements http.RoundTripper.
func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	in := req.Clone(req.Context())
	if req.Body != nil {
		// The clone shares the body: h reads it, RoundTrip closes it.
		defer req.Body.Close()
	} else {
		in.Body = http.NoBody
	}
	in.Host = req.Host
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	u := *req.URL
	u.Scheme, u.Host, u.User = "", "", nil
	in.URL, in.RequestURI = &u, u.RequestURI()
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	t.h.ServeHTTP(rec, in)
	return &http.Response{
		Status:        strconv.Itoa(rec.status) + " " + http.StatusText(rec.status),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header,
		Body:          io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		ContentLength: int64(rec.body.Len()),
		Request:       req,
	}, nil
}

// recorder is the ResponseWriter of an in-process request.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

// Header implements http.ResponseWriter.
func (r *recorder) Header() http.Header { return r.header }

// WriteHeader implements http.ResponseWriter; the first status counts.
func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

// Write implements http.ResponseWriter.
func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
