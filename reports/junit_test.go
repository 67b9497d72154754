package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
)

// junitOf renders run's junit.xml, validates it against testdata/junit.xsd and parses it.
func junitOf(t *testing.T, run *history.Run, res *checker.Result) (junitSuites, string) {
	t.Helper()
	v, err := newView(run, res)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := v.junit(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), JUnitFile)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	validateJUnit(t, path)
	var d junitSuites
	if err := xml.Unmarshal(b.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	return d, b.String()
}

func props(s junitSuite) map[string]string {
	m := map[string]string{}
	for _, p := range s.Properties {
		m[p.Name] = p.Value
	}
	return m
}

// junit.xml for CI: the run's length as the suite's time, test cases whose names and
// class tell runs apart, the failover percentiles with n as properties.
func TestJUnitForCI(t *testing.T) {
	run, res := loadRunAt(t, filepath.Join("testdata", "runs", "pass"))
	run.Info.Target, run.Info.Store = "redsync", "postgres"
	run.Info.Redis = &history.RedisSetup{Topology: "sentinel"}
	d, _ := junitOf(t, run, res)
	s := d.Suites[0]
	// The run took 43.6 s by run.json; the checker's 48 ms are a property.
	if s.Time != "43.600" || d.Time != "43.600" {
		t.Errorf("suite time %s, testsuites time %s; want the run's 43.600", s.Time, d.Time)
	}
	class := "fenceline.redsync.sentinel.postgres"
	seen := map[string]bool{}
	for _, c := range s.Cases {
		if c.Classname != class || !strings.HasSuffix(c.Name, " (seed 20260105)") || seen[c.Name] {
			t.Errorf("case %q of class %q: want a unique \"<check> (seed 20260105)\" of %s", c.Name, c.Classname, class)
		}
		seen[c.Name] = true
	}
	p := props(s)
	if p["check_time"] != "0.048" {
		t.Errorf("check_time %q", p["check_time"])
	}
	for _, f := range res.Failover {
		k := "failover." + f.Fault
		if p[k+".n"] != strconv.Itoa(f.ToNewToken.Count) {
			t.Errorf("%s.n = %q, want %d", k, p[k+".n"], f.ToNewToken.Count)
		}
		if f.ToNewToken.Count == 0 {
			continue
		}
		if p[k+".p50_ns"] != strconv.FormatInt(int64(f.ToNewToken.P50), 10) || p[k+".p99_ns"] != strconv.FormatInt(int64(f.ToNewToken.P99), 10) {
			t.Errorf("%s: p50_ns %q p99_ns %q, want %d %d", k, p[k+".p50_ns"], p[k+".p99_ns"], f.ToNewToken.P50, f.ToNewToken.P99)
		}
		if want := fmt.Sprintf("(n=%d, fewer than 5", f.ToNewToken.Count); !strings.Contains(p[k+".p99"], want) {
			t.Errorf("%s.p99 = %q lacks %q", k, p[k+".p99"], want)
		}
	}
	if p["redis_lost_acknowledged_writes"] != "false" {
		t.Errorf("redis_lost_acknowledged_writes = %q for a valid run", p["redis_lost_acknowledged_writes"])
	}
	// A run without run.json's end is as long as what it recorded.
	run.Info.End = 0
	if d, _ := junitOf(t, run, res); d.Suites[0].Time == "0.048" || d.Suites[0].Time == "0.000" {
		t.Errorf("an unfinished run's time is %s", d.Suites[0].Time)
	}
}

// An invalid run whose violations Redis caused by losing acknowledged writes says so in
// junit.xml, results.json and index.html, as report.md does.
func TestRedisLossInEveryReport(t *testing.T) {
	run, res := loadRunAt(t, filepath.Join("testdata", "runs", "fail"))
	run.Faults = append(run.Faults, history.Event{ID: "fault-x", Type: history.Invoke, Kind: history.KindFault, Node: "redis",
		Fault: faults.RedisFailover, Time: run.Info.Start + int64(30*time.Second)})
	history.SortByTime(run.Faults)
	st := run.Store
	if len(st.Audit) < 3 || st.AuditLen() != len(st.Audit) {
		t.Fatal("the stored failing run keeps its audit stream in store.json")
	}
	st.Audit = st.Audit[:len(st.Audit)-2] // the last two acknowledged commits' entries are lost
	why, ok := RedisLostWrites(run, res)
	if !ok {
		t.Fatal("RedisLostWrites finds nothing")
	}
	d, _ := junitOf(t, run, res)
	p := props(d.Suites[0])
	if p["redis_lost_acknowledged_writes"] != "true" || p["redis_lost_acknowledged_writes.evidence"] != why ||
		p["redis_lost_acknowledged_writes.commits"] != "2" {
		t.Errorf("junit properties: %q, %q, %q commits", p["redis_lost_acknowledged_writes"], p["redis_lost_acknowledged_writes.evidence"], p["redis_lost_acknowledged_writes.commits"])
	}
	var r map[string]any
	if err := json.Unmarshal(render(t, WriteResults, run, res), &r); err != nil {
		t.Fatal(err)
	}
	if r["redis_lost_acknowledged_writes"] != true || r["redis_lost_acknowledged_writes_evidence"] != why || r["redis_lost_acknowledged_commits"] != 2.0 {
		t.Errorf("results.json: %v, %v, %v", r["redis_lost_acknowledged_writes"], r["redis_lost_acknowledged_writes_evidence"], r["redis_lost_acknowledged_commits"])
	}
	page, md := string(render(t, HTML, run, res)), string(render(t, Markdown, run, res))
	if !strings.Contains(page, `<span class="badge redis-loss"`) || !strings.Contains(page, ">"+RedisLossLabel+"</span>") {
		t.Error("index.html has no Redis-loss badge")
	}
	if !strings.Contains(md, "**"+RedisLossLabel+"**") {
		t.Error("report.md does not label the Redis loss")
	}
	// Without the Redis fault, nothing is labelled.
	run.Faults = run.Faults[:0]
	if strings.Contains(string(render(t, HTML, run, res)), `id="redis-loss"`) {
		t.Error("index.html labels a run without a Redis fault")
	}
	if d, _ := junitOf(t, run, res); props(d.Suites[0])["redis_lost_acknowledged_writes"] != "false" {
		t.Error("junit labels a run without a Redis fault")
	}
}
