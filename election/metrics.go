package election

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics receives the elector's measurements (Config.Metrics). The elector calls it on
// the lease's critical path: implementations must be safe for concurrent use and must not
// block. NopMetrics discards everything; PrometheusMetrics exports it.
type Metrics interface {
	// BecameLeader is called when a term with token starts (won or adopted).
	BecameLeader(token int64)
	// LostLeadership is called when a term ends, with the reason.
	LostLeadership(reason Reason)
	// RenewAnswered is called after a renewal that Redis answered (extended or rejected),
	// with its latency from send to reply in real time.
	RenewAnswered(latency time.Duration)
	// RenewFailed is called after a renewal that got no answer (timeout, connection error).
	RenewFailed()
	// Recovered is called when the elector found the lock holding one of its own values
	// that no term of its uses (an acquire or renewal whose reply was lost, a term that
	// ended, an earlier process of the instance) and adopted or released it.
	Recovered(how Recovery)
	// LeadOverdue is called when a lead func has not returned LeadGrace after its term
	// ended (see Config.LeadGrace).
	LeadOverdue()
}

// Recovery is what the elector did with a lock value of its own that no term used.
type Recovery string

// Recoveries.
const (
	// RecoveryAdopted: the lock held the token of an acquire of this elector whose reply
	// was lost; the elector leads that term.
	RecoveryAdopted Recovery = "adopted"
	// RecoveryReleased: the lock held a value of this instance that no term uses; the
	// elector released it (and published the release notice) so a new term can start.
	RecoveryReleased Recovery = "released"
)

// NopMetrics discards every measurement. It is Config.Metrics's default. Its methods do
// nothing.
type NopMetrics struct{}

func (NopMetrics) BecameLeader(int64)          {}
func (NopMetrics) LostLeadership(Reason)       {}
func (NopMetrics) RenewAnswered(time.Duration) {}
func (NopMetrics) RenewFailed()                {}
func (NopMetrics) Recovered(Recovery)          {}
func (NopMetrics) LeadOverdue()                {}

// PrometheusMetrics are the election's Prometheus metrics. A nil *PrometheusMetrics
// records nothing.
//
//	fenceline_election_token                      gauge    fencing token of this instance's term, 0 when not leader
//	fenceline_election_is_leader                  gauge    1 while this instance leads
//	fenceline_election_won_total                  counter  terms started (won or adopted)
//	fenceline_election_leadership_lost_total      counter  terms ended, by reason
//	fenceline_election_renew_duration_seconds     histogram renewals answered by Redis (ok or rejected), send to reply
//	fenceline_election_renew_failures_total       counter  renewals without an answer (timeout, connection error)
//	fenceline_election_recovered_total            counter  own lock values adopted or released, by how
//	fenceline_election_lead_overdue_total         counter  lead funcs still running LeadGrace after their term ended
//
// The election counts no fencing rejection: only the fenced store sees one, and it counts
// it (fenceline_listener_fencing_rejections_total), so one event has one metric.
type PrometheusMetrics struct {
	token         prometheus.Gauge
	isLeader      prometheus.Gauge
	won           prometheus.Counter
	lost          *prometheus.CounterVec
	renewLatency  prometheus.Histogram
	renewFailures prometheus.Counter
	recovered     *prometheus.CounterVec
	leadOverdue   prometheus.Counter
}

var _ Metrics = (*PrometheusMetrics)(nil)

// NewPrometheusMetrics creates the election metrics with the constant labels labels (may
// be nil) and registers them with reg (not registered if reg is nil; never a global
// registry unless the caller passes one).
//
// Several electors in one process can each have their own series on one registry: give
// each distinct labels, e.g. prometheus.Labels{"election": name}. Creating metrics twice
// with the same labels on one registry is not an error: the second shares the first's
// collectors (so two electors of one election in one process share a gauge). Any other
// registration conflict (another collector of the same name with a different help or
// label set) is returned as an error.
func NewPrometheusMetrics(reg prometheus.Registerer, labels prometheus.Labels) (*PrometheusMetrics, error) {
	const ns, sub = "fenceline", "election"
	m := &PrometheusMetrics{
		token: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "token", ConstLabels: labels,
			Help: "Fencing token of this instance's current term; 0 when not leader."}),
		isLeader: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "is_leader", ConstLabels: labels,
			Help: "1 while this instance leads, else 0."}),
		won: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "won_total", ConstLabels: labels,
			Help: "Terms started (elections won, and terms adopted after a lost acquire reply)."}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "leadership_lost_total", ConstLabels: labels,
			Help: "Terms ended, by reason."}, []string{"reason"}),
		renewLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "renew_duration_seconds", ConstLabels: labels,
			Help:    "Latency of lease renewals that Redis answered, from send to reply.",
			Buckets: prometheus.ExponentialBuckets(0.00025, 2, 14)}), // 0.25ms .. 2s
		renewFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "renew_failures_total", ConstLabels: labels,
			Help: "Lease renewals that got no answer (timeout, connection error)."}),
		recovered: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "recovered_total", ConstLabels: labels,
			Help: "Lock values of this instance that no term used, adopted (a lost acquire reply) or released."}, []string{"how"}),
		leadOverdue: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "lead_overdue_total", ConstLabels: labels,
			Help: "Lead funcs that had not returned LeadGrace after their term ended."}),
	}
	if reg == nil {
		m.export()
		return m, nil
	}
	var err error
	register := func(c prometheus.Collector) prometheus.Collector {
		if err != nil {
			return c
		}
		rerr := reg.Register(c)
		var are prometheus.AlreadyRegisteredError
		switch {
		case rerr == nil:
			return c
		case errors.As(rerr, &are):
			return are.ExistingCollector
		}
		err = rerr
		return c
	}
	// An existing collector of the same descriptor was registered by this function, so it
	// has the same type; the checked assertions guard against a foreign one.
	var ok [8]bool
	m.token, ok[0] = register(m.token).(prometheus.Gauge)
	m.isLeader, ok[1] = register(m.isLeader).(prometheus.Gauge)
	m.won, ok[2] = register(m.won).(prometheus.Counter)
	m.lost, ok[3] = register(m.lost).(*prometheus.CounterVec)
	m.renewLatency, ok[4] = register(m.renewLatency).(prometheus.Histogram)
	m.renewFailures, ok[5] = register(m.renewFailures).(prometheus.Counter)
	m.recovered, ok[6] = register(m.recovered).(*prometheus.CounterVec)
	m.leadOverdue, ok[7] = register(m.leadOverdue).(prometheus.Counter)
	if err != nil {
		return nil, err
	}
	for _, o := range ok {
		if !o {
			return nil, errors.New("election: a collector of another type is registered under an election metric's name")
		}
	}
	m.export()
	return m, nil
}

// export creates every labelled series at 0, so that they are exported from the start.
func (m *PrometheusMetrics) export() {
	for _, r := range []Reason{ReasonLeaseExpired, ReasonRenewRejected, ReasonShutdown, ReasonLeadReturned} {
		m.lost.WithLabelValues(string(r))
	}
	for _, r := range []Recovery{RecoveryAdopted, RecoveryReleased} {
		m.recovered.WithLabelValues(string(r))
	}
}

// BecameLeader implements Metrics.
func (m *PrometheusMetrics) BecameLeader(token int64) {
	if m != nil {
		m.won.Inc()
		m.isLeader.Set(1)
		m.token.Set(float64(token))
	}
}

// LostLeadership implements Metrics.
func (m *PrometheusMetrics) LostLeadership(r Reason) {
	if m != nil {
		m.isLeader.Set(0)
		m.token.Set(0)
		m.lost.WithLabelValues(string(r)).Inc()
	}
}

// RenewAnswered implements Metrics.
func (m *PrometheusMetrics) RenewAnswered(d time.Duration) {
	if m != nil {
		m.renewLatency.Observe(d.Seconds())
	}
}

// RenewFailed implements Metrics.
func (m *PrometheusMetrics) RenewFailed() {
	if m != nil {
		m.renewFailures.Inc()
	}
}

// Recovered implements Metrics.
func (m *PrometheusMetrics) Recovered(how Recovery) {
	if m != nil {
		m.recovered.WithLabelValues(string(how)).Inc()
	}
}

// LeadOverdue implements Metrics.
func (m *PrometheusMetrics) LeadOverdue() {
	if m != nil {
		m.leadOverdue.Inc()
	}
}
