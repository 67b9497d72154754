package reports

import (
	"fmt"
	"slices"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
)

// RedisLossLabel is how a report names an invalid run whose violations Redis caused by
// losing acknowledged writes in a promotion: a finding about Redis's asynchronous
// replication, not a bug of the election.
const RedisLossLabel = "Redis lost acknowledged writes in a failover"

// RedisLostWrites says whether an invalid run's violations come with proof that Redis
// lost writes it had acknowledged (or let be read) across a promotion, and what the proof
// is: the run had
// a replicated Redis fault, and either one token was acknowledged to two nodes (the
// counter's INCR was lost and the token issued again), or an acknowledged commit's audit
// entry (written by the same script) is missing from the final store, or the final token
// counter is below a token that was acknowledged, or the final cursor is below a commit
// that was acknowledged, or a load read a cursor that no commit of the final store wrote. None of these can happen while Redis keeps what it acknowledged.
func RedisLostWrites(run *history.Run, res *checker.Result) (string, bool) {
	if res == nil || res.Verdict != checker.Invalid || run == nil {
		return "", false
	}
	promoted := false
	for _, f := range run.Faults {
		if f.Type == history.Invoke && slices.Contains(faults.Replicated(), f.Fault) {
			promoted = true
		}
	}
	if !promoted {
		return "", false
	}
	// An adoption (an acquire invoked with the token it takes over) acknowledges a
	// token a second time by design: only fresh acquires count.
	adoptions := map[string]bool{}
	for i := range run.Events.Len() {
		e := run.Events.At(i)
		if e.Kind == history.KindAcquire && e.Type == history.Invoke && e.Token != 0 {
			adoptions[e.ID] = true
		}
	}
	holders := map[int64]string{}
	var maxToken, maxCursor int64
	for i := range run.Events.Len() {
		e := run.Events.At(i)
		if e.Type != history.OK {
			continue
		}
		switch e.Kind {
		case history.KindAcquire:
			if adoptions[e.ID] {
				continue
			}
			if h, ok := holders[e.Token]; ok {
				return fmt.Sprintf("token %d was acknowledged to %s and again to %s: the counter's INCR was lost", e.Token, h, e.Node), true
			}
			holders[e.Token] = e.Node
			maxToken = max(maxToken, e.Token)
		case history.KindCommit:
			maxCursor = max(maxCursor, e.To)
		}
	}
	if st := run.Store; st != nil {
		audited := make(map[string]bool, st.AuditLen())
		for ai := range st.AuditLen() {
			a := st.AuditAt(ai)
			audited[a.Op] = true
		}
		// The cursor record holds the cursor and the token of the commit that wrote it,
		// or the token of a write that moved no cursor (and ran, so its token stands,
		// even when its body failed after the check).
		type write struct{ cursor, token int64 }
		written := map[write]bool{}
		tokenOnly := map[int64]bool{}
		for ai := range st.AuditLen() {
			a := st.AuditAt(ai)
			switch {
			case a.Kind == history.KindWrite && (a.Result == "ok" || a.Result == history.AuditBodyFailed):
				tokenOnly[a.Token] = true
			case a.Result == "ok":
				written[write{a.To, a.Token}] = true
			}
		}
		for i := range run.Events.Len() {
			e := run.Events.At(i)
			if e.Kind == history.KindCommit && e.Type == history.OK && !audited[e.ID] {
				return fmt.Sprintf("commit %s by %s (token %d, cursor %d→%d) was acknowledged, and its audit entry, written in the same script, is not in the final store", e.ID, e.Node, e.Token, e.From, e.To), true
			}
		}
		for i := range run.Events.Len() {
			e := run.Events.At(i)
			// Every cursor a load returns was written by an accepted commit, audited in
			// the same script: a cursor and token no audit entry wrote were read, then lost.
			if e.Kind == history.KindLoad && e.Type == history.OK && e.Cursor > 0 && !written[write{e.Cursor, e.Token}] && !tokenOnly[e.Token] {
				return fmt.Sprintf("load %s by %s read cursor %d written under token %d, which no commit in the final store wrote: the write was read and then lost (its commit may have been unacknowledged, as with a WAIT that missed)", e.ID, e.Node, e.Cursor, e.Token), true
			}
		}
		if st.TokenCounter < maxToken {
			return fmt.Sprintf("the final token counter is %d, below token %d, which was acknowledged", st.TokenCounter, maxToken), true
		}
		if st.Cursor < maxCursor {
			return fmt.Sprintf("the final cursor is %d, below cursor %d, which a commit was acknowledged to write", st.Cursor, maxCursor), true
		}
	}
	return "", false
}

// redisLoss is the finding RedisLostWrites makes, as the reports carry it.
type redisLoss struct {
	Lost bool
	// Evidence is RedisLostWrites's proof; "" when Lost is false.
	Evidence string
	// Commits counts the acknowledged commits whose audit entry (written by the same
	// script) is missing from the final store: writes Redis certainly lost. 0 when
	// the proof is of another kind (a token issued twice, a counter gone back).
	Commits int
}

// redisLoss derives the finding once per view.
func (v *view) redisLoss() redisLoss {
	why, ok := RedisLostWrites(v.run, v.res)
	if !ok {
		return redisLoss{}
	}
	return redisLoss{Lost: true, Evidence: why, Commits: lostCommits(v.run)}
}

// lostCommits counts the commits acknowledged to a node whose audit entry is not in
// the final store.
func lostCommits(run *history.Run) int {
	st := run.Store
	if st == nil {
		return 0
	}
	audited := make(map[string]bool, st.AuditLen())
	for ai := range st.AuditLen() {
		audited[st.AuditAt(ai).Op] = true
	}
	n := 0
	for i := range run.Events.Len() {
		e := run.Events.At(i)
		if e.Kind == history.KindCommit && e.Type == history.OK && !audited[e.ID] {
			n++
		}
	}
	return n
}
