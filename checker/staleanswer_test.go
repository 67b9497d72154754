package checker

import (
	"testing"

	"github.com/fenceline/fenceline/history"
)

// The store owes a stale writer the answer stale-token, whatever its cursor, and a writer
// whose token is not below an accepted one any answer but that: a clean run's audit with
// one answer changed is invalid, and the clean one is not; on PostgreSQL the reasons are
// not judged.
func TestStaleWriterToldStale(t *testing.T) {
	wantCheck(t, checkOnly(t, cleanRun(1), CheckStaleWrite), Valid, "")
	for _, c := range []struct {
		name         string
		from, to     string
		stale        bool // the entry to change has a token below one accepted before it
		wantOffended string
	}{
		{"stale told cursor-conflict", history.ErrStaleToken, history.ErrCursorConflict, true, "was rejected as cursor-conflict, not stale-token"},
		{"fresh told stale", "ok", history.ErrStaleToken, false, "is at least every token accepted before it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := cleanRun(1)
			st := run.Store
			changed := false
			maxTok := int64(-1)
			for i := range st.Audit {
				a := &st.Audit[i]
				if a.Result == c.from && (a.Token < maxTok) == c.stale {
					a.Result, changed = c.to, true
					break
				}
				if a.Result == "ok" {
					maxTok = max(maxTok, a.Token)
				}
			}
			if !changed {
				t.Fatalf("the clean run's audit has no %s answer to a writer with stale=%v", c.from, c.stale)
			}
			wantCheck(t, checkOnly(t, run, CheckStaleWrite), Invalid, c.wantOffended)
			// PostgreSQL's audit order is not that of its rejections: not judged there.
			run.Info.Store = "postgres"
			wantCheck(t, checkOnly(t, run, CheckStaleWrite), Valid, "")
		})
	}
}
