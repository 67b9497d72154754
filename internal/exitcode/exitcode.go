// Package exitcode holds the exit codes of every fenceline command, and the rule that
// turns a verdict into one.
package exitcode

import "github.com/fenceline/fenceline/checker"

// Exit codes.
const (
	OK      = 0 // valid, or success
	Invalid = 1 // the checker found a violation
	Usage   = 2 // usage error or bad input
	Unknown = 3 // the checker could not decide, or the run could not be completed: never a pass
)

// Of is the exit code of a verdict: OK for valid, Invalid for invalid, Unknown for
// anything else.
func Of(v checker.Verdict) int {
	switch v {
	case checker.Valid:
		return OK
	case checker.Invalid:
		return Invalid
	}
	return Unknown
}
