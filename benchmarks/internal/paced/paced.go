// Package paced sends HTTP requests at a fixed rate, an open loop, and
// measures each one's latency from the moment it was due.
//
// wrk keeps a fixed number of connections busy: it measures how many
// requests a server answers at saturation, and a slow answer delays the
// requests behind it instead of being counted against them. A question such
// as "the p99 of a cache miss at 7,000 requests a second" needs the rate
// fixed and the latency taken from when each request should have been sent
// (so that a stall shows in every request it held back, not in one), which
// is what Run does.
package paced

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Config is one run.
type Config struct {
	// Addr is the server's host:port.
	Addr string
	// Host is the Host header; empty sends Addr.
	Host string
	// UserAgent is the User-Agent header.
	UserAgent string
	// Method is the request's method (default GET). A HEAD is sent on a
	// connection of the sender's own and its answer read up to the end of
	// its header, which keeps the connection: an answer to a HEAD without
	// Content-Length (fasthttp's, the edge's) makes fasthttp's client close
	// the connection after each request, and wrk wait for a body.
	Method string
	// Header, when set, adds the i-th request's own headers (after Host and
	// User-Agent, which it may replace).
	Header func(i int64, h *fasthttp.RequestHeader)
	// Path returns the path of the i-th request (from 0).
	Path func(i int64) string
	// Rate is the requests a second.
	Rate float64
	// Duration is how long requests are sent.
	Duration time.Duration
	// Conns is the most requests in flight at once (and connections).
	Conns int
	// Timeout bounds one request; a request past it is an error.
	Timeout time.Duration
}

// Result is what a run measured.
type Result struct {
	// Sent is the requests due in the run, Done those answered (any status).
	Sent, Done int64
	// Errors are requests with no answer (timeouts, refused connections).
	Errors int64
	// Status counts the answers by HTTP status.
	Status map[int]int64
	// Elapsed is from the first request's due time to the last answer.
	Elapsed time.Duration
	// P50, P90, P99 and Max are of the latencies of answered requests, from
	// each request's due time to its answer's end.
	P50, P90, P99, Max time.Duration
}

// Rate is the answered requests a second.
func (r Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Done) / r.Elapsed.Seconds()
}

func (c Config) check() error {
	switch {
	case c.Addr == "" || c.Path == nil:
		return errors.New("paced: Addr and Path are required")
	case c.Rate <= 0 || c.Duration <= 0 || c.Conns < 1:
		return fmt.Errorf("paced: rate %v, duration %v and conns %d must be positive", c.Rate, c.Duration, c.Conns)
	}
	return nil
}

// Run sends Rate requests a second for Duration and waits for their answers.
// Requests fall due at even intervals; one due while all Conns are busy
// waits for a free one, its wait counted in its latency.
func Run(ctx context.Context, c Config) (Result, error) {
	if err := c.check(); err != nil {
		return Result{}, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	client := &fasthttp.HostClient{Addr: c.Addr, MaxConns: c.Conns, ReadTimeout: timeout, WriteTimeout: timeout,
		MaxIdemponentCallAttempts: 1, NoDefaultUserAgentHeader: true}
	host := c.Host
	if host == "" {
		host = c.Addr
	}
	total := int64(c.Rate * c.Duration.Seconds())
	interval := time.Duration(float64(time.Second) / c.Rate)
	due := make(chan int64, c.Conns)
	start := time.Now()

	var (
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, total)
		status    = map[int]int64{}
		errs      atomic.Int64
		wg        sync.WaitGroup
	)
	for range c.Conns {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			own := make([]time.Duration, 0, total/int64(c.Conns)+1)
			ownStatus := map[int]int64{}
			var raw rawConn
			defer raw.close()
			for i := range due {
				req.Reset()
				req.SetRequestURI(c.Path(i))
				req.SetHost(host)
				req.Header.SetUserAgent(c.UserAgent)
				if c.Method != "" {
					req.Header.SetMethod(c.Method)
				}
				if c.Header != nil {
					c.Header(i, &req.Header)
				}
				var code int
				var err error
				if req.Header.IsHead() {
					code, err = raw.head(c.Addr, req, &resp.Header, timeout)
				} else if err = client.DoTimeout(req, resp, timeout); err == nil {
					code = resp.StatusCode()
				}
				if err != nil {
					errs.Add(1)
					continue
				}
				own = append(own, time.Since(start.Add(time.Duration(i)*interval)))
				ownStatus[code]++
			}
			mu.Lock()
			latencies = append(latencies, own...)
			for k, v := range ownStatus {
				status[k] += v
			}
			mu.Unlock()
		})
	}
	var sent int64
	for sent < total && ctx.Err() == nil {
		// Every request due by now goes; the next is waited for. Sleeping
		// to each due time would oversleep at thousands a second.
		for now := time.Since(start); sent < total && time.Duration(sent)*interval <= now; sent++ {
			due <- sent
		}
		time.Sleep(min(interval, time.Millisecond))
	}
	close(due)
	wg.Wait()
	r := Result{Sent: sent, Done: int64(len(latencies)), Errors: errs.Load(), Status: status, Elapsed: time.Since(start)}
	slices.Sort(latencies)
	r.P50, r.P90, r.P99 = quantile(latencies, 0.50), quantile(latencies, 0.90), quantile(latencies, 0.99)
	if len(latencies) > 0 {
		r.Max = latencies[len(latencies)-1]
	}
	return r, ctx.Err()
}

// rawConn is a kept connection for HEAD requests.
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

// head sends req's header and reads the answer's header into h; a failure
// on a kept connection is tried once more on a new one.
func (r *rawConn) head(addr string, req *fasthttp.Request, h *fasthttp.ResponseHeader, timeout time.Duration) (int, error) {
	var err error
	for range 2 {
		fresh := r.c == nil
		if fresh {
			if r.c, err = net.DialTimeout("tcp", addr, timeout); err != nil {
				r.c = nil
				return 0, err
			}
			r.br, r.bw = bufio.NewReader(r.c), bufio.NewWriter(r.c)
		}
		if err = r.c.SetDeadline(time.Now().Add(timeout)); err == nil {
			if err = req.Write(r.bw); err == nil {
				err = r.bw.Flush()
			}
			if err == nil {
				h.Reset()
				if err = h.Read(r.br); err == nil {
					return h.StatusCode(), nil
				}
			}
		}
		r.close()
		if fresh {
			break
		}
	}
	return 0, err
}

func (r *rawConn) close() {
	if r.c != nil {
		r.c.Close()
		r.c = nil
	}
}

// quantile is the q-quantile of sorted (nearest rank); 0 when empty.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
