package listener

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestPrometheusMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewPrometheusMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveCommit(OutcomeOK, 100, time.Millisecond)
	m.ObserveCommit(OutcomeOK, 20, time.Millisecond)
	m.ObserveCommit(OutcomeStaleToken, 100, time.Millisecond)
	m.ObserveCommit(OutcomeCursorConflict, 100, time.Millisecond)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			key := f.GetName()
			for _, l := range mt.GetLabel() {
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
		"fenceline_listener_fencing_rejections_total":                 1,
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
	if _, err := NewPrometheusMetrics(reg); err == nil {
		t.Error("registering twice succeeded")
	}
}
