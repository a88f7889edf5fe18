package webhooks

import "github.com/prometheus/client_golang/prometheus"

// metrics are what an operator watches of webhook delivery
// (docs/operations.md): how attempts end, how long they take, how many are
// in flight, and the endpoints the circuit breaker pauses or the failure
// count disables.
type metrics struct {
	delivered, rejected, unreachable prometheus.Counter
	duration                         prometheus.Histogram
	inFlight                         prometheus.Gauge
	paused, disabled                 prometheus.Counter
}

// newMetrics registers the dispatcher's series on reg; a nil reg keeps
// them unregistered (tests, the API's own test dispatcher).
func newMetrics(reg prometheus.Registerer) *metrics {
	attempts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shortlink_webhook_attempts_total",
		Help: "Webhook delivery attempts by result: delivered (2xx), rejected (another HTTP status), unreachable (no answer: timeout, refused, DNS, TLS).",
	}, []string{"result"})
	m := &metrics{
		delivered:   attempts.WithLabelValues("delivered"),
		rejected:    attempts.WithLabelValues("rejected"),
		unreachable: attempts.WithLabelValues("unreachable"),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "shortlink_webhook_attempt_duration_seconds",
			Help:    "Time of a webhook delivery attempt, from dialling to the answer's body read.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shortlink_webhook_attempts_in_flight",
			Help: "Webhook delivery attempts this control plane is making now.",
		}),
		paused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortlink_webhook_breaker_opens_total",
			Help: "Times a webhook's circuit breaker paused it: its receiver left attempts unanswered in a row.",
		}),
		disabled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shortlink_webhook_disabled_total",
			Help: "Webhooks disabled after 10 consecutive failed attempts.",
		}),
	}
	if reg != nil {
		reg.MustRegister(attempts, m.duration, m.inFlight, m.paused, m.disabled)
	}
	return m
}

// attempt counts the end of an attempt.
func (m *metrics) attempt(res Result) {
	switch {
	case res.OK:
		m.delivered.Inc()
	case res.Status != 0:
		m.rejected.Inc()
	default:
		m.unreachable.Inc()
	}
	m.duration.Observe(res.Elapsed.Seconds())
}
