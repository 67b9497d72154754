package checker

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// CheckFailoverBudget fails a run whose failover windows exceed a budget: a slower
// election is a regression like an unsafe one. It runs only when Options.Budgets is set.
const CheckFailoverBudget = "failover-budget"

// Budget bounds a statistic of one fault kind's failover windows (Window.ToNewToken).
type Budget struct {
	Fault string        // fault kind, e.g. "kill"
	Stat  string        // "p50", "p90", "p99" or "max"
	Limit time.Duration // the statistic must not exceed it
}

func (b Budget) String() string { return fmt.Sprintf("%s.%s=%v", b.Fault, b.Stat, b.Limit) }

// ErrBadBudget is wrapped by the errors of ParseBudgets.
var ErrBadBudget = errors.New("checker: bad budget")

// ParseBudgets reads a comma-separated list of FAULT.STAT=DURATION, such as
// "kill.p99=2.5s,stop.p99=50ms". STAT is p50, p90, p99 or max. Errors wrap ErrBadBudget.
func ParseBudgets(s string) ([]Budget, error) {
	var out []Budget
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, ok := strings.Cut(item, "=")
		fault, stat, ok2 := strings.Cut(key, ".")
		if !ok || !ok2 || fault == "" {
			return nil, fmt.Errorf("%w %q: want FAULT.STAT=DURATION, e.g. kill.p99=2.5s", ErrBadBudget, item)
		}
		switch stat {
		case "p50", "p90", "p99", "max":
		default:
			return nil, fmt.Errorf("%w %q: the statistic is p50, p90, p99 or max", ErrBadBudget, item)
		}
		d, err := time.ParseDuration(val)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%w %q: the limit must be a positive duration", ErrBadBudget, item)
		}
		out = append(out, Budget{Fault: fault, Stat: stat, Limit: d})
	}
	return out, nil
}

func (d Distribution) stat(name string) time.Duration {
	switch name {
	case "p50":
		return d.P50
	case "p90":
		return d.P90
	case "p99":
		return d.P99
	}
	return d.Max
}

// FewSamples is the sample count below which a percentile is marked as standing on
// too few windows (the reports mark it; a budget's message says so).
const FewSamples = 5

// failoverBudget judges res's failover windows against budgets. A budget over fewer
// than FewSamples windows is judged all the same, and its message says how many; one
// with no window of its kind is not judged and fails nothing. A violation is dated at
// the first window of that kind longer than the limit.
func failoverBudget(res *Result, budgets []Budget) CheckResult {
	cr := CheckResult{Name: CheckFailoverBudget, Verdict: Valid}
	var bad []finding
	var ok []string
	for _, b := range budgets {
		var d Distribution
		for _, s := range res.Failover {
			if s.Fault == b.Fault {
				d = s.ToNewToken
			}
		}
		got := d.stat(b.Stat)
		n := fmt.Sprintf("%d windows", d.Count)
		if d.Count > 0 && d.Count < FewSamples {
			// Judged all the same: a window over the limit is a breach however few
			// there are; but the reader must know what the statistic stood on.
			n = fmt.Sprintf("only %d windows, fewer than %d", d.Count, FewSamples)
		}
		switch {
		case d.Count == 0:
			ok = append(ok, fmt.Sprintf("%s not judged (no %s window)", b, b.Fault))
			continue
		case got <= b.Limit:
			ok = append(ok, fmt.Sprintf("%s %v (%s)", b, got, n))
			continue
		}
		var first int64
		for _, w := range res.Windows {
			if w.Fault == b.Fault && w.ToNewToken > b.Limit {
				first = w.FirstNew
				break
			}
		}
		bad = append(bad, finding{at: first, what: fmt.Sprintf("budget %s exceeded: %s of the %s windows is %v (%s)",
			b, b.Stat, b.Fault, got.Round(time.Millisecond), n)})
	}
	if len(bad) == 0 {
		cr.Message = "every failover budget met: " + strings.Join(ok, "; ")
		return cr
	}
	cr.Verdict = Invalid
	cr.Message = fmt.Sprintf("%d of %d failover budgets exceeded", len(bad), len(budgets))
	cr.setOffending(bad, len(bad), 0)
	return cr
}
