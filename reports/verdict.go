package reports

import (
	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

// Verdict is the verdict of a run: the checker's, except that a run that was not
// completed, or whose result holds no check at all, is never a pass. Every command that
// turns a run into an exit code or a report uses this one rule.
func Verdict(run *history.Run, res *checker.Result) checker.Verdict {
	if res == nil {
		return checker.Unknown
	}
	vd := res.Verdict
	if vd == "" {
		vd = checker.Unknown
	}
	// A run stopped at a violation that the complete check does not confirm ran short
	// of its duration: it proves nothing either way.
	if vd == checker.Valid && (len(res.Checks) == 0 || run == nil || run.Info.Interrupted != "" || run.Info.StoppedAtViolation != "") {
		return checker.Unknown
	}
	return vd
}

// faultLabel names a fault kind in the report's tables: a Redis outage the harness did
// not inject is labelled as such, so that its failover windows are not read as the
// effect of a scheduled fault.
func faultLabel(kind string) string {
	if kind == history.FaultRedisUnavailable {
		return "no injected fault (Redis unavailable)"
	}
	return kind
}
