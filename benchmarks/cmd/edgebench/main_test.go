package main

import (
	"testing"
	"time"

	"shortlink.dev/benchmarks/internal/wrk"
)

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for _, ns := range []uint64{0, 1, 63, 64, 65, 127, 128, 129, 1000, 1 << 20, 123456789, 1 << 62, 1<<64 - 1} {
		i := bucketOf(ns)
		if i < prev || i >= len(histogram{}.buckets) {
			t.Fatalf("bucketOf(%d) = %d after %d", ns, i, prev)
		}
		prev = i
		up := bucketUpper(i)
		if up < ns || float64(up-ns) > float64(ns)/64+1 {
			t.Fatalf("bucketOf(%d) = %d, whose upper bound %d is not within 1/64 above", ns, i, up)
		}
		if i > 0 && bucketUpper(i-1) >= ns {
			t.Fatalf("bucket %d below %d's also holds it", i-1, ns)
		}
	}
}

func TestHistogramQuantile(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.99, 990 * time.Microsecond}} {
		got := h.quantile(c.q)
		if got < c.want || got > c.want+c.want/64 {
			t.Errorf("quantile(%v) = %v, want %v (+1/64)", c.q, got, c.want)
		}
	}
}

func TestParseWrk(t *testing.T) {
	out := `Running 10s test @ http://127.0.0.1:40000/bench
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.30ms    1.50ms  40.00ms   95.00%
    Req/Sec    45.00k     2.00k   50.00k    70.00%
  Latency Distribution
     50%  970.00us
     75%    1.20ms
     90%    1.80ms
     99%    6.25ms
  451234 requests in 10.01s, 60.00MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 4
Requests/sec:  45078.32
Transfer/sec:      5.99MB
`
	w, err := wrk.Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	r := fromWrk(w)
	// The elapsed time comes from Requests/sec: 451234 / 45078.32 s.
	if d := r.elapsed - 10010*time.Millisecond; r.requests != 451234 || d < -time.Millisecond || d > time.Millisecond ||
		r.p50 != 970*time.Microsecond || r.p99 != 6250*time.Microsecond || r.errors != 7 {
		t.Fatalf("parsed %+v", r)
	}
	if _, err := wrk.Parse([]byte("unable to connect")); err == nil {
		t.Fatal("no error for a report without figures")
	}
	if d, err := wrk.ParseDuration("1.50m"); err != nil || d != 90*time.Second {
		t.Fatalf("1.50m = %v, %v", d, err)
	}
}
