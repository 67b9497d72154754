package listener

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestPrometheusMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewPrometheusMetrics(reg, prometheus.Labels{"election": "e"})
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveCommit(OutcomeOK, 100, time.Millisecond)
	m.ObserveCommit(OutcomeOK, 20, time.Millisecond)
	m.ObserveCommit(OutcomeStaleToken, 100, time.Millisecond)
	m.ObserveCommit(OutcomeCursorConflict, 100, time.Millisecond)
	// The store counts rejections, the listener does not (one count per rejection);
	// metrics made twice with the same labels share their collectors.
	again, err := NewPrometheusMetrics(reg, prometheus.Labels{"election": "e"})
	if err != nil {
		t.Fatalf("the same labels again: %v", err)
	}
	for _, o := range []Outcome{OutcomeOK, OutcomeStaleToken, OutcomeCursorConflict, OutcomeUnknown} {
		again.ObserveFenced(o)
	}
	m.ObserveFenced(OutcomeStaleToken)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			key := f.GetName()
			for _, l := range mt.GetLabel() {
				if l.GetName() == "election" {
					if l.GetValue() != "e" {
						t.Errorf("%s: label election=%q", key, l.GetValue())
					}
					continue
				}
				key += "{" + l.GetValue() + "}"
			}
			switch {
			case mt.GetCounter() != nil:
				got[key] = mt.GetCounter().GetValue()
			case mt.GetHistogram() != nil:
				got[key] = float64(mt.GetHistogram().GetSampleCount())
			}
		}
	}
	want := map[string]float64{
		"fenceline_listener_events_applied_total":                     120,
		"fenceline_listener_fencing_rejections_total":                 2,
		"fenceline_listener_commits_total{ok}":                        2,
		"fenceline_listener_commits_total{stale-token}":               1,
		"fenceline_listener_commits_total{cursor-conflict}":           1,
		"fenceline_listener_commit_duration_seconds{ok}":              2,
		"fenceline_listener_commit_duration_seconds{stale-token}":     1,
		"fenceline_listener_commit_duration_seconds{cursor-conflict}": 1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	foreign := prometheus.NewRegistry()
	foreign.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "fenceline_listener_events_applied_total", Help: "x"}))
	if _, err := NewPrometheusMetrics(foreign, nil); err == nil {
		t.Error("NewPrometheusMetrics over a foreign collector: no error")
	}
	if _, err := NewPrometheusMetrics(nil, nil); err != nil {
		t.Errorf("no registry: %v", err)
	}
}
