package reports

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
)

// A percentile over fewer than 5 samples says so, with its n and which sample it is.
func TestPercentileCells(t *testing.T) {
	for _, tc := range []struct {
		q    float64
		n    int
		want string
	}{
		{0.99, 2, "1.2s (n=2, fewer than 5: the maximum)"},
		{0.50, 2, "1.2s (n=2, fewer than 5: the minimum)"},
		{0.50, 1, "1.2s (n=1, fewer than 5: the only sample)"},
		{0.50, 4, "1.2s (n=4, fewer than 5: sample 2 of 4)"},
		{0.90, 4, "1.2s (n=4, fewer than 5: the maximum)"},
		{0.99, 5, "1.2s"},
	} {
		if got := pctCell(1200*time.Millisecond, tc.q, tc.n); got != tc.want {
			t.Errorf("pctCell(p%.0f of %d) = %q, want %q", 100*tc.q, tc.n, got, tc.want)
		}
	}
	// The rank is checker.Summarize's: the cell names the sample the checker chose.
	for n := 1; n < minSamples; n++ {
		var ds []time.Duration
		for i := range n {
			ds = append(ds, time.Duration(i+1)*time.Second)
		}
		d := checker.Summarize(ds)
		for _, p := range []struct {
			q float64
			v time.Duration
		}{{0.50, d.P50}, {0.90, d.P90}, {0.99, d.P99}} {
			if k := nearestRank(p.q, n); ds[k-1] != p.v {
				t.Errorf("p%.0f of %d: rank %d is %v, the checker's is %v", 100*p.q, n, k, ds[k-1], p.v)
			}
		}
	}
}

// Every renderer shows the failover percentiles with their n: report.md and index.html
// in the cell, the terminal with a mark and a note, results.json beside them.
func TestPercentilesCarryN(t *testing.T) {
	run, res := loadRunAt(t, filepath.Join("testdata", "runs", "pass"))
	md, page, sum := render(t, Markdown, run, res), render(t, HTML, run, res), render(t, Summary, run, res)
	r, err := NewResults(run, res)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Failover {
		d := f.ToNewToken
		if d.N != f.Windows || d.FewSamples != (d.N > 0 && d.N < minSamples) {
			t.Errorf("%s: n %d, fewer_than_5 %v for %d windows", f.Fault, d.N, d.FewSamples, f.Windows)
		}
		if d.N == 0 || d.N >= minSamples {
			continue
		}
		cell := pctCell(d.P99, 0.99, d.N)
		if !strings.Contains(string(md), " "+cell+" |") || !strings.Contains(string(page), ">"+cell+"<") {
			t.Errorf("%s: report.md or index.html lacks %q", f.Fault, cell)
		}
	}
	if !strings.Contains(string(sum), "* over fewer than 5 windows") {
		t.Error("the summary does not explain its marked percentiles")
	}
}
