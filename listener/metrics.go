package listener

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcome is what became of a commit or fenced write attempt.
type Outcome string

// Outcomes of a commit or fenced write attempt.
const (
	OutcomeOK             Outcome = "ok"              // applied
	OutcomeStaleToken     Outcome = "stale-token"     // rejected: fencing-token-rejected
	OutcomeCursorConflict Outcome = "cursor-conflict" // rejected: the cursor had moved
	OutcomeUnknown        Outcome = "unknown"         // timeout or connection error
	OutcomeBadArgument    Outcome = "bad-argument"    // rejected: the batch is malformed
	OutcomeBodyError      Outcome = "error"           // a fenced body failed after the fence
)

// Metrics receives the Listener's measurements. Implementations must be safe for
// concurrent use and must not block.
type Metrics interface {
	// ObserveCommit is called after every commit attempt with its outcome, the batch size
	// (events applied when the outcome is OutcomeOK) and its latency.
	ObserveCommit(outcome Outcome, events int, latency time.Duration)
}

// FenceMetrics receives a store's measurements: the store, not its caller, counts what
// its fence rejects. Implementations must be safe for concurrent use and must not block.
type FenceMetrics interface {
	// ObserveFenced is called after every fenced write attempt (a commit included) with
	// its outcome.
	ObserveFenced(outcome Outcome)
}

// NopMetrics discards every measurement. It is the default of Config.Metrics and of
// the stores' Metrics.
type NopMetrics struct{}

// ObserveCommit does nothing.
func (NopMetrics) ObserveCommit(Outcome, int, time.Duration) {}

// ObserveFenced does nothing.
func (NopMetrics) ObserveFenced(Outcome) {}

// PrometheusMetrics exports the Listener's and a store's measurements as Prometheus
// metrics: give it to both.
//
//	fenceline_listener_commits_total{outcome}           counter (Listener)
//	fenceline_listener_events_applied_total             counter (Listener)
//	fenceline_listener_commit_duration_seconds{outcome} histogram (Listener)
//	fenceline_listener_fencing_rejections_total         counter (store: every fenced
//	                                                    write rejected as stale-token)
type PrometheusMetrics struct {
	commits    *prometheus.CounterVec
	applied    prometheus.Counter
	rejections prometheus.Counter
	latency    *prometheus.HistogramVec
}

var (
	_ Metrics      = (*PrometheusMetrics)(nil)
	_ FenceMetrics = (*PrometheusMetrics)(nil)
)

// NewPrometheusMetrics creates the metrics with the constant labels labels (may be nil)
// and registers them with reg (not registered if reg is nil; never a global registry
// unless the caller passes one). As election.NewPrometheusMetrics: creating them twice
// with the same labels on one registry shares the first's collectors; any other
// registration conflict is an error.
func NewPrometheusMetrics(reg prometheus.Registerer, labels prometheus.Labels) (*PrometheusMetrics, error) {
	const ns, sub = "fenceline", "listener"
	m := &PrometheusMetrics{
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "commits_total",
			ConstLabels: labels, Help: "Commit attempts by outcome (ok, stale-token, cursor-conflict, unknown)."},
			[]string{"outcome"}),
		applied: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "events_applied_total",
			ConstLabels: labels, Help: "Events applied by accepted commits."}),
		rejections: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "fencing_rejections_total",
			ConstLabels: labels, Help: "Fenced writes (commits included) the store rejected because their fencing token was stale (fencing-token-rejected)."}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "commit_duration_seconds",
			ConstLabels: labels, Help: "Latency of commit attempts.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16), // 50µs .. 1.6s
		}, []string{"outcome"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	register := func(c prometheus.Collector) prometheus.Collector {
		rerr := reg.Register(c)
		var are prometheus.AlreadyRegisteredError
		switch {
		case rerr == nil:
			return c
		case errors.As(rerr, &are):
			return are.ExistingCollector
		}
		err = errors.Join(err, rerr)
		return c
	}
	var ok [4]bool
	m.commits, ok[0] = register(m.commits).(*prometheus.CounterVec)
	m.applied, ok[1] = register(m.applied).(prometheus.Counter)
	m.rejections, ok[2] = register(m.rejections).(prometheus.Counter)
	m.latency, ok[3] = register(m.latency).(*prometheus.HistogramVec)
	if err != nil {
		return nil, err
	}
	if ok != [4]bool{true, true, true, true} {
		return nil, errors.New("listener: a collector of another type is registered under a listener metric's name")
	}
	return m, nil
}

// ObserveCommit records one commit attempt.
func (m *PrometheusMetrics) ObserveCommit(o Outcome, events int, latency time.Duration) {
	m.commits.WithLabelValues(string(o)).Inc()
	m.latency.WithLabelValues(string(o)).Observe(latency.Seconds())
	if o == OutcomeOK {
		m.applied.Add(float64(events))
	}
}

// ObserveFenced counts a stale-token rejection.
func (m *PrometheusMetrics) ObserveFenced(o Outcome) {
	if o == OutcomeStaleToken {
		m.rejections.Inc()
	}
}
