package failpoint

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kinds of action.
const (
	Sleep = "sleep" // sleep(DURATION): the hit sleeps, then goes on
	Block = "block" // the hit waits until the point is disarmed (or armed again)
	Error = "error" // the hook returns ErrInjected, as if the request had failed
	Exit  = "exit"  // exit(CODE): the process exits at once (code 1 by default), like a crash
)

// Action is what a hit of an armed point does, Count times (the next Count hits).
type Action struct {
	Kind  string
	Count int           // >= 1
	Sleep time.Duration // for Sleep
	Code  int           // for Exit
}

// String is the action in the syntax Parse reads.
func (a Action) String() string {
	s := a.Kind
	switch a.Kind {
	case Sleep:
		s = fmt.Sprintf("sleep(%v)", a.Sleep)
	case Exit:
		s = fmt.Sprintf("exit(%d)", a.Code)
	}
	if a.Count != 1 {
		s = fmt.Sprintf("%d*%s", a.Count, s)
	}
	return s
}

// maxCount bounds N in "N*action": a point armed for more hits than that is a typo.
const maxCount = 1 << 20

// Parse reads an action: [N*]sleep(DURATION) | [N*]block | [N*]error | [N*]exit[(CODE)],
// as gofail writes them; N (default 1) is how many of the next hits run it. Errors wrap
// ErrBadAction.
func Parse(s string) (Action, error) {
	bad := func(why string) (Action, error) {
		return Action{}, fmt.Errorf("%w %q: %s (want [N*]sleep(DURATION), block, error or exit[(CODE)])", ErrBadAction, s, why)
	}
	a := Action{Count: 1}
	rest := strings.TrimSpace(s)
	if n, body, ok := strings.Cut(rest, "*"); ok {
		c, err := strconv.Atoi(n)
		if err != nil || c < 1 || c > maxCount {
			return bad("the count must be an integer from 1 to " + strconv.Itoa(maxCount))
		}
		a.Count, rest = c, body
	}
	kind, arg, hasArg := strings.Cut(rest, "(")
	if hasArg {
		var ok bool
		if arg, ok = strings.CutSuffix(arg, ")"); !ok {
			return bad("unclosed parenthesis")
		}
	}
	a.Kind = kind
	switch kind {
	case Sleep:
		d, err := time.ParseDuration(arg)
		if !hasArg || err != nil || d <= 0 {
			return bad("sleep needs a positive duration")
		}
		a.Sleep = d
	case Block, Error:
		if hasArg {
			return bad(kind + " takes no argument")
		}
	case Exit:
		a.Code = 1
		if hasArg {
			c, err := strconv.Atoi(arg)
			if err != nil || c < 0 || c > 125 {
				return bad("the exit code must be an integer from 0 to 125")
			}
			a.Code = c
		}
	default:
		return bad("unknown action")
	}
	return a, nil
}
