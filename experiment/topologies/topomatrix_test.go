//go:build chaos

package topologies

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/experiment/matrix"
)

// Rows run alone (one topology) replace theirs in the stored table, the others stay,
// and the header says how each part was run: also for a table of the first format,
// with one sentence for the whole matrix.
func TestMergeMarkdown(t *testing.T) {
	old, err := os.ReadFile("../../reports/topologies.md")
	if err != nil {
		t.Fatal(err)
	}
	var sums []Summary
	for _, c := range Cells() {
		if c.Topology == backend.TopologyCluster {
			sums = append(sums, Summary{Cell: c, Runs: 3, Tally: matrix.Tally{Valid: 3}, Failed: map[string]int{}})
		}
	}
	var b strings.Builder
	WriteMarkdown(&b, Config{Seeds: 3, Duration: time.Minute, Command: "fenceline topologies --topology cluster --seeds 3 --duration 1m0s"}, sums)
	got := MergeMarkdown(string(old), b.String())
	rows := map[string]int{}
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(l, "| single") || strings.HasPrefix(l, "| sentinel") || strings.HasPrefix(l, "| cluster") {
			rows[strings.TrimSpace(strings.Split(l, "|")[1])]++
		}
	}
	if rows["single"] != 1 || rows["sentinel"] != 12 || rows["cluster"] != 12 {
		t.Fatalf("rows by topology %v, want single 1, sentinel 12, cluster 12:\n%s", rows, got)
	}
	for _, want := range []string{"- `fenceline topologies --seeds 3 --duration 1m0s`: the single, sentinel rows,",
		"- `fenceline topologies --topology cluster --seeds 3 --duration 1m0s`: the cluster rows, seeds 1..3,"} {
		if !strings.Contains(got, want) {
			t.Errorf("merged table lacks %q:\n%s", want, got)
		}
	}
	// The stored table's rows and its separator line are kept as they were.
	for _, l := range strings.Split(string(old), "\n") {
		if strings.HasPrefix(l, "| single") || strings.HasPrefix(l, "| sentinel") || strings.HasPrefix(l, "|---") {
			if !strings.Contains(got, l+"\n") {
				t.Errorf("merged table lost the line %q", l)
			}
		}
	}
	// Merging the same rows again changes nothing.
	if again := MergeMarkdown(got, b.String()); again != got {
		t.Errorf("a second merge changed the table:\n%s\n---\n%s", got, again)
	}
}
