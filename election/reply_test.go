package election

import (
	"errors"
	"testing"
	"time"
)

// The acquire script's reply is read strictly: a refusal must name its holder, and the
// first element is 1, 0 or -1. The not-present code changed (acquireScript:17:12 ±1, a
// mutant) read as "held by nobody" used to be recorded as a refusal of a free lock.
func TestParseAcquireReply(t *testing.T) {
	for _, c := range []struct {
		name  string
		reply []any
		want  acquireReply
		bad   bool
	}{
		{"won", []any{int64(1), "42", int64(0)}, acquireReply{won: true, token: 42}, false},
		{"took over", []any{int64(1), "43", int64(1)}, acquireReply{won: true, token: 43, tookOver: true}, false},
		{"held", []any{int64(0), "n2:41", int64(1500)}, acquireReply{holder: "n2:41", pttl: 1500 * time.Millisecond}, false},
		{"not present, lock free", []any{int64(-1), "", int64(-2)}, acquireReply{absent: true, pttl: -1}, false},
		{"not present, lock held", []any{int64(-1), "n2:41", int64(900)}, acquireReply{absent: true, holder: "n2:41", pttl: 900 * time.Millisecond}, false},
		{"held by nobody", []any{int64(0), "", int64(-2)}, acquireReply{}, true},
		{"an unknown code", []any{int64(-2), "", int64(-2)}, acquireReply{}, true},
		{"a token that is no integer", []any{int64(1), "x", int64(0)}, acquireReply{}, true},
		{"too short", []any{int64(0), "n2:41"}, acquireReply{}, true},
	} {
		got, err := parseAcquireReply(c.reply)
		if c.bad {
			if !errors.Is(err, ErrUnexpectedReply) {
				t.Errorf("%s: %+v, %v; want ErrUnexpectedReply", c.name, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}
