package election

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the election's Prometheus metrics. A nil *Metrics records nothing, so every
// method is safe to call on the Config default. One Metrics serves one Elector; to run
// several elections in one process, give each a registerer wrapped with a distinguishing
// label (prometheus.WrapRegistererWith).
type Metrics struct {
	token           prometheus.Gauge
	isLeader        prometheus.Gauge
	won             prometheus.Counter
	lost            *prometheus.CounterVec
	renewLatency    prometheus.Histogram
	renewFailures   prometheus.Counter
	fencingRejected prometheus.Counter
}

// NewMetrics creates the election metrics and registers them with reg (not registered if
// reg is nil). Registering twice with one registry is a programmer error and panics, as
// prometheus.MustRegister does.
//
//	fenceline_election_token                      gauge    fencing token of this instance's term, 0 when not leader
//	fenceline_election_is_leader                  gauge    1 while this instance leads
//	fenceline_election_won_total                  counter  elections won
//	fenceline_election_leadership_lost_total      counter  terms ended, by reason
//	fenceline_election_renew_duration_seconds     histogram renewals answered by Redis (ok or rejected), send to reply
//	fenceline_election_renew_failures_total       counter  renewals without an answer (timeout, connection error)
//	fenceline_election_fencing_rejected_total     counter  writes the store rejected as stale (see FencingRejected)
func NewMetrics(reg prometheus.Registerer) *Metrics {
	const ns, sub = "fenceline", "election"
	m := &Metrics{
		token: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "token",
			Help: "Fencing token of this instance's current term; 0 when not leader."}),
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "is_leader",
			Help: "1 while this instance leads, else 0."}),
		won: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "won_total",
			Help: "Elections won (terms started)."}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "leadership_lost_total",
			Help: "Terms ended, by reason."}, []string{"reason"}),
		renewLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "renew_duration_seconds",
			Help:    "Latency of lease renewals that Redis answered, from send to reply.",
			Buckets: prometheus.ExponentialBuckets(0.00025, 2, 14)}), // 0.25ms .. 2s
		renewFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "renew_failures_total",
			Help: "Lease renewals that got no answer (timeout, connection error)."}),
		fencingRejected: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "fencing_rejected_total",
			Help: "Writes rejected by the store because their fencing token was stale."}),
	}
	for _, r := range []Reason{ReasonLeaseExpired, ReasonRenewRejected, ReasonShutdown, ReasonLeadReturned} {
		m.lost.WithLabelValues(string(r)) // export every reason from the start, at 0
	}
	if reg != nil {
		reg.MustRegister(m.token, m.isLeader, m.won, m.lost, m.renewLatency, m.renewFailures, m.fencingRejected)
	}
	return m
}

// FencingRejected counts one write that the store rejected because its token was stale.
// The elector cannot see the store: the caller that owns the fenced write calls this.
func (m *Metrics) FencingRejected() {
	if m != nil {
		m.fencingRejected.Inc()
	}
}

func (m *Metrics) becameLeader(token int64) {
	if m != nil {
		m.won.Inc()
		m.isLeader.Set(1)
		m.token.Set(float64(token))
	}
}

func (m *Metrics) lostLeadership(r Reason) {
	if m != nil {
		m.isLeader.Set(0)
		m.token.Set(0)
		m.lost.WithLabelValues(string(r)).Inc()
	}
}

func (m *Metrics) renewed(d time.Duration) {
	if m != nil {
		m.renewLatency.Observe(d.Seconds())
	}
}

func (m *Metrics) renewFailed() {
	if m != nil {
		m.renewFailures.Inc()
	}
}
