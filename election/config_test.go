package election

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

func TestConfigValidation(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string // "" = valid
	}{
		{"defaults", Config{InstanceID: "a"}, ""},
		{"derived from lease", Config{InstanceID: "a", LeaseTTL: 300 * ms}, ""},
		{"all set", Config{InstanceID: "a", Name: "x", LeaseTTL: 10 * time.Second, RenewInterval: 3 * time.Second,
			DriftMargin: time.Second, RetryInterval: time.Second, RequestTimeout: time.Second}, ""},
		{"no instance", Config{}, "InstanceID"},
		{"brace in name", Config{InstanceID: "a", Name: "a}b"}, "Name"},
		{"negative lease", Config{InstanceID: "a", LeaseTTL: -time.Second}, "LeaseTTL"},
		{"sub-millisecond lease", Config{InstanceID: "a", LeaseTTL: 1500 * time.Microsecond}, "LeaseTTL"},
		{"renew = lease", Config{InstanceID: "a", RenewInterval: 2 * time.Second}, "RenewInterval"},
		{"renew > lease", Config{InstanceID: "a", RenewInterval: 3 * time.Second}, "RenewInterval"},
		{"negative renew", Config{InstanceID: "a", RenewInterval: -ms}, "RenewInterval"},
		{"negative margin", Config{InstanceID: "a", DriftMargin: -ms}, "DriftMargin"},
		{"margin leaves no renewal", Config{InstanceID: "a", RenewInterval: time.Second, DriftMargin: time.Second}, "DriftMargin"},
		{"retry > lease", Config{InstanceID: "a", RetryInterval: 3 * time.Second}, "RetryInterval"},
		{"negative retry", Config{InstanceID: "a", RetryInterval: -ms}, "RetryInterval"},
		{"timeout = renew", Config{InstanceID: "a", RenewInterval: 500 * ms, RequestTimeout: 500 * ms}, "RequestTimeout"},
		{"negative timeout", Config{InstanceID: "a", RequestTimeout: -ms}, "RequestTimeout"},
		{"presence interval without takeover", Config{InstanceID: "a", PresenceInterval: ms}, "PresenceInterval"},
		{"presence interval above retry", Config{InstanceID: "a", TakeoverOnDisconnect: true, RetryInterval: 100 * ms, PresenceInterval: 200 * ms}, "PresenceInterval"},
		{"negative presence interval", Config{InstanceID: "a", TakeoverOnDisconnect: true, PresenceInterval: -ms}, "PresenceInterval"},
		{"takeover, defaults", Config{InstanceID: "a", TakeoverOnDisconnect: true}, ""},
		{"negative lead grace", Config{InstanceID: "a", LeadGrace: -ms}, "LeadGrace"},
		{"lead grace", Config{InstanceID: "a", LeadGrace: 10 * time.Second}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // New sends nothing
			defer c.Close()
			e, err := New(c, tc.cfg)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if e.cfg.validate() != nil {
					t.Fatal("defaults do not validate")
				}
				return
			}
			var ce *ConfigError
			if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("New = %v, want a ConfigError on %s", err, tc.field)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{InstanceID: "a"}.WithDefaults()
	want := Config{InstanceID: "a", Name: "fenceline", LeaseTTL: 2 * time.Second, RenewInterval: 2 * time.Second / 3,
		DriftMargin: 100 * time.Millisecond, RetryInterval: 500 * time.Millisecond, RequestTimeout: time.Second / 3}
	if c.Name != want.Name || c.LeaseTTL != want.LeaseTTL || c.RenewInterval != want.RenewInterval ||
		c.DriftMargin != want.DriftMargin || c.RetryInterval != want.RetryInterval || c.RequestTimeout != want.RequestTimeout {
		t.Errorf("defaults = %+v, want %+v", c, want)
	}
	if c.Clock == nil || c.Logger == nil || c.Recorder == nil || c.Metrics != (NopMetrics{}) {
		t.Errorf("defaults: clock %v logger %v recorder %v metrics %v", c.Clock, c.Logger, c.Recorder, c.Metrics)
	}
	if _, err := New(nil, Config{InstanceID: "a"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("New(nil client) = %v, want ErrInvalidConfig", err)
	}
}

func TestKeys(t *testing.T) {
	for got, want := range map[string]string{
		LockKey(""):           "{fenceline}:lock",
		TokenKey("fenceline"): "{fenceline}:token",
		ReleaseChannel("x"):   "{x}:released",
		KeyPrefix("x"):        "{x}:",
		LockValue("n:1", 42):  "n:1:42",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	inst, tok, err := ParseLockValue("n:1:42")
	if inst != "n:1" || tok != 42 || err != nil {
		t.Errorf("ParseLockValue = %q, %d, %v", inst, tok, err)
	}
	for _, v := range []string{"", "a", ":1", "a:", "a:x", "a:0", "a:-3"} {
		if _, _, err := ParseLockValue(v); !errors.Is(err, ErrMalformedLock) {
			t.Errorf("ParseLockValue(%q) = %v, want ErrMalformedLock", v, err)
		}
	}
}

// Logs use constant messages with the data in attributes.
func TestLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		fs := newFakeStore()
		fs.setFault(OpRenew, func(call int) fault {
			if call == 1 {
				return fault{err: errConnReset}
			}
			return fault{}
		})
		e, _ := newTestElector(t, fs, Config{InstanceID: "a", Logger: log})
		stop := start(t, e, newTracker().lead)
		time.Sleep(time.Second)
		stop()

		var got []map[string]any
		for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("bad log line %s: %v", line, err)
			}
			got = append(got, m)
		}
		want := []struct {
			msg    string
			reason string
		}{{"became-leader", ""}, {"renew-failed", ""}, {"lost-leadership", "shutdown"}, {"released", ""}}
		if len(got) != len(want) {
			t.Fatalf("logged %s", buf.Bytes())
		}
		for i, w := range want {
			g := got[i]
			if g["msg"] != w.msg || g["token"] != float64(1) || g["instance"] != "a" || g["election"] != "fenceline" {
				t.Errorf("log %d = %v, want %s with token 1, instance a, election fenceline", i, g, w.msg)
			}
			if w.reason != "" && g["reason"] != w.reason {
				t.Errorf("log %d reason = %v, want %s", i, g["reason"], w.reason)
			}
		}
		if got[1]["error"] == nil {
			t.Errorf("renew-failed without error: %v", got[1])
		}
	})
}

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m, err := NewPrometheusMetrics(reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		fs := newFakeStore()
		e, _ := newTestElector(t, fs, Config{InstanceID: "a", Metrics: m})
		stop := start(t, e, newTracker().lead)
		time.Sleep(time.Second)
		synctest.Wait()
		if v := gather(t, reg, "fenceline_election_is_leader", ""); v != 1 {
			t.Errorf("is_leader = %v, want 1", v)
		}
		if v := gather(t, reg, "fenceline_election_token", ""); v != 1 {
			t.Errorf("token = %v, want 1", v)
		}
		stop()
		for name, want := range map[string]float64{
			"fenceline_election_is_leader":              0,
			"fenceline_election_won_total":              1,
			"fenceline_election_renew_duration_seconds": 1, // sample count
		} {
			if v := gather(t, reg, name, ""); v != want {
				t.Errorf("%s = %v, want %v", name, v, want)
			}
		}
		if v := gather(t, reg, "fenceline_election_leadership_lost_total", "shutdown"); v != 1 {
			t.Errorf("lost{shutdown} = %v, want 1", v)
		}
		if v := gather(t, reg, "fenceline_election_leadership_lost_total", "lease-expired"); v != 0 {
			t.Errorf("lost{lease-expired} = %v, want 0", v)
		}
		var nilMetrics *PrometheusMetrics
		nilMetrics.BecameLeader(1) // records nothing, does not panic
	})
}

// gather returns a metric's value (a histogram's sample count), selecting the series whose
// reason label is reason if reason is set. It fails the test if there is no such series.
func gather(t *testing.T, reg prometheus.Gatherer, name, reason string) float64 {
	t.Helper()
	return gatherLabel(t, reg, name, "reason", reason)
}

// gatherLabel is gather of the series of name whose label is value (any series if value
// is empty).
func gatherLabel(t *testing.T, reg prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if value != "" && !hasLabel(m, label, value) {
				continue
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("no metric %s{%s=%q}", name, label, value)
	return 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}
