// Package exitcode holds the exit codes of every fenceline command; checker.Verdict.ExitCode
// turns a verdict into one.
package exitcode

// Exit codes.
const (
	OK      = 0 // valid, or success
	Invalid = 1 // the checker found a violation
	Usage   = 2 // usage error or bad input
	Unknown = 3 // the checker could not decide, or the run could not be completed: never a pass
)
