package redirect

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The series of the clicks an edge took and will never deliver.
const (
	droppedName = "shortlink_edge_clicks_dropped_total"
	droppedHelp = "Click events dropped: the producer's memory buffer full, its spool on disk full or failing, or a click too large for a Kafka record."
)

// metrics are the edge's Prometheus series, resolved once so that counting
// costs no allocation on the hot path.
type metrics struct {
	redirects, notFound, gone, password, tooMany, failed prometheus.Counter
	bots, dropped, cacheHits, cacheMisses, bioPages      prometheus.Counter
	passwordChecks, passwordShed                         prometheus.Counter
	latency                                              prometheus.Histogram
}

// clickCounts is a click producer that counts the clicks it dropped in all,
// also those it took and then could not keep (both of the platform's do).
type clickCounts interface {
	Dropped() int64
}

// clickSpool is a click producer with a spool on disk (Kafka's): how many
// bytes of clicks wait there.
type clickSpool interface {
	Spooled() int64
}

func newMetrics(reg prometheus.Registerer, clicks any) *metrics {
	outcomes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shortlink_edge_requests_total",
		Help: "Edge requests by outcome: redirect, not_found, gone, password, too_many, error.",
	}, []string{"outcome"})
	newCounter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &metrics{
		redirects:   outcomes.WithLabelValues("redirect"),
		notFound:    outcomes.WithLabelValues("not_found"),
		gone:        outcomes.WithLabelValues("gone"),
		password:    outcomes.WithLabelValues("password"),
		tooMany:     outcomes.WithLabelValues("too_many"),
		failed:      outcomes.WithLabelValues("error"),
		bots:        newCounter("shortlink_edge_bot_clicks_total", "Redirects of known bots (not counted as clicks)."),
		dropped:     newCounter(droppedName, droppedHelp),
		cacheHits:   newCounter("shortlink_edge_cache_hits_total", "Link lookups answered by the cache."),
		cacheMisses: newCounter("shortlink_edge_cache_misses_total", "Link lookups that read the store."),
		bioPages:    newCounter("shortlink_edge_gallery_pages_total", "Gallery pages (/bio/{slug}) served."),
		passwordChecks: newCounter("shortlink_edge_password_checks_total",
			"Link passwords checked (argon2id runs)."),
		passwordShed: newCounter("shortlink_edge_password_checks_shed_total",
			"Password tries answered 429 because the edge was checking as many passwords as its memory budget allows."),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "shortlink_edge_request_duration_seconds",
			Help:    "Edge request latency, sampled: one request in 8 is timed (shortlink_edge_requests_total counts them all).",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1},
		}),
	}
	reg.MustRegister(outcomes, m.bots, m.cacheHits, m.cacheMisses, m.bioPages, m.passwordChecks, m.passwordShed, m.latency)
	if c, ok := clicks.(clickCounts); ok {
		// The producer counts every click it drops, also after it took it
		// from the edge: a spool at its bound or on a full disk, a click too
		// large for a record. The edge's own count (Offer refused) is part
		// of it, so that counter goes unregistered.
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: droppedName, Help: droppedHelp},
			func() float64 { return float64(c.Dropped()) }))
	} else {
		reg.MustRegister(m.dropped)
	}
	if c, ok := clicks.(clickSpool); ok {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shortlink_edge_click_spool_bytes",
			Help: "Bytes of clicks in the on-disk spool, waiting for Kafka to come back (0 while it takes them).",
		}, func() float64 { return float64(c.Spooled()) }))
	}
	return m
}

// latencySampling: one request in this many is timed for the latency
// histogram. Reading the clock once more costs a redirect about 0.1–0.2 µs on
// a virtual machine; a sample of one in eight gives the same quantiles.
const latencySampling = 8

// observeLatency records the time since the request's start. On the real
// clock it reads only the monotonic clock (time.Since), half a time.Now.
func (e *Edge) observeLatency(start time.Time) {
	var d time.Duration
	if e.realClock {
		d = time.Since(start)
	} else {
		d = e.now().Sub(start)
	}
	e.metrics.latency.Observe(d.Seconds())
}
