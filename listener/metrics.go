package listener

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcome is what became of a commit attempt.
type Outcome string

// Outcomes of a commit attempt.
const (
	OutcomeOK             Outcome = "ok"              // applied
	OutcomeStaleToken     Outcome = "stale-token"     // rejected: fencing-token-rejected
	OutcomeCursorConflict Outcome = "cursor-conflict" // rejected: the cursor had moved
	OutcomeUnknown        Outcome = "unknown"         // timeout or connection error
	OutcomeBadArgument    Outcome = "bad-argument"    // rejected: the batch is malformed
)

// Metrics receives the Listener's measurements. Implementations must be safe for
// concurrent use and must not block.
type Metrics interface {
	// ObserveCommit is called after every commit attempt with its outcome, the batch size
	// (events applied when the outcome is OutcomeOK) and its latency.
	ObserveCommit(outcome Outcome, events int, latency time.Duration)
}

// NopMetrics discards every measurement. It is Config.Metrics's default.
type NopMetrics struct{}

// ObserveCommit does nothing.
func (NopMetrics) ObserveCommit(Outcome, int, time.Duration) {}

// PrometheusMetrics exports the Listener's measurements as Prometheus metrics:
//
//	fenceline_listener_commits_total{outcome}          counter
//	fenceline_listener_events_applied_total            counter
//	fenceline_listener_fencing_rejections_total        counter (outcome stale-token)
//	fenceline_listener_commit_duration_seconds{outcome} histogram
type PrometheusMetrics struct {
	commits    *prometheus.CounterVec
	applied    prometheus.Counter
	rejections prometheus.Counter
	latency    *prometheus.HistogramVec
}

var _ Metrics = (*PrometheusMetrics)(nil)

// NewPrometheusMetrics creates the metrics and registers them with reg (never a global
// registry unless the caller passes one).
func NewPrometheusMetrics(reg prometheus.Registerer) (*PrometheusMetrics, error) {
	m := &PrometheusMetrics{
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fenceline_listener_commits_total",
			Help: "Commit attempts by outcome (ok, stale-token, cursor-conflict, unknown).",
		}, []string{"outcome"}),
		applied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fenceline_listener_events_applied_total",
			Help: "Events applied by accepted commits.",
		}),
		rejections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fenceline_listener_fencing_rejections_total",
			Help: "Commits rejected because their fencing token was stale (fencing-token-rejected).",
		}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "fenceline_listener_commit_duration_seconds",
			Help:    "Latency of commit attempts.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16), // 50µs .. 1.6s
		}, []string{"outcome"}),
	}
	for _, c := range []prometheus.Collector{m.commits, m.applied, m.rejections, m.latency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ObserveCommit records one commit attempt.
func (m *PrometheusMetrics) ObserveCommit(o Outcome, events int, latency time.Duration) {
	m.commits.WithLabelValues(string(o)).Inc()
	m.latency.WithLabelValues(string(o)).Observe(latency.Seconds())
	switch o {
	case OutcomeOK:
		m.applied.Add(float64(events))
	case OutcomeStaleToken:
		m.rejections.Inc()
	}
}
