// Package workloads decides what the clients of a chaos run do and which checks apply
// to what they did.
//
//   - listener (default): every node runs the elector and, while it leads, the fenced
//     listener ingesting the event source. Every check applies.
//   - register: every node runs several clients that take their own tokens from the
//     token counter and do fenced commits and reads on the cursor store directly, with
//     no election, to exercise the store's linearizability under concurrency. Effects and
//     progress of a leader do not apply; linearizability and the token checks do.
package workloads

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/source"
)

// Workload is what the nodes of a run do.
type Workload struct {
	// Name is what --workload takes.
	Name string
	// SourceRate is the event source's rate, events per second (0: unlimited).
	SourceRate float64
	// Batch is the number of events per commit.
	Batch int
	// Checks are the checker's checks that apply, by name; nil means all of them.
	Checks []string
}

var all = []Workload{
	{Name: "listener", SourceRate: 400, Batch: 20},
	// Register clients take real tokens and commit real events, so every check applies
	// but leadership overlap: there is no election.
	{Name: "register", SourceRate: 400, Batch: 1, Checks: []string{
		checker.CheckLinearizability, checker.CheckStaleWrite, checker.CheckUniqueTokens,
		checker.CheckExactlyOnce, checker.CheckCursorMonotonic, checker.CheckProgress,
		checker.CheckAudit,
	}},
}

// ByName returns the workload called name.
func ByName(name string) (Workload, error) {
	for _, w := range all {
		if w.Name == name {
			w.Checks = slices.Clone(w.Checks)
			return w, nil
		}
	}
	return Workload{}, fmt.Errorf("workloads: unknown workload %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the workloads.
func Names() []string {
	var n []string
	for _, w := range all {
		n = append(n, w.Name)
	}
	return n
}

// CheckerOptions are the checker's options for a stored run described by info, whose
// directory is dir: the checks that apply to its workload (all of them for a workload
// this build does not know, so that nothing is skipped silently), the cursor it started
// from and the balances the event source implies from there.
func CheckerOptions(info history.RunInfo, dir string) checker.Options {
	opts := checker.Options{ExpectedBalances: source.Balances, OutDir: dir, InitialCursor: info.StartCursor}
	if from := info.StartCursor; from != 0 {
		opts.ExpectedBalances = func(upTo int64) map[string]int64 { return source.BalancesBetween(from, upTo) }
	}
	if wl, err := ByName(info.Workload); err == nil {
		opts.Checks = wl.Checks
	}
	return opts
}
