package reports

import (
	"strings"

	"github.com/fenceline/fenceline/checker"
)

// ChaosCommand is the program that replays and shrinks runs (cmd/fenceline built with
// the chaos tags, as `make` installs it).
const ChaosCommand = "fenceline-chaos"

// wayBack returns the commands that lead back into a run that did not pass: replay its
// schedule, and shrink it to a smaller schedule that still fails. It names the run's
// directory as the renderer was given it (relative stays relative); nil for a valid run.
func (v *view) wayBack() []string {
	if v.verdict() == checker.Valid {
		return nil
	}
	dir := shellQuote(orDefault(v.run.Dir, "RUN_DIR"))
	return []string{
		ChaosCommand + " chaos --replay " + dir,
		ChaosCommand + " shrink " + dir,
	}
}

// wayBackIntro says what the commands of wayBack do.
const wayBackIntro = "Run the same schedule again against a fresh cluster, or search it for the smallest schedule that still fails:"

// shellQuote quotes s for a POSIX shell when it holds anything but the characters of
// an ordinary path.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
