package election

import (
	"log/slog"
	"time"
)

// overdue is a term whose lead func had not returned LeadGrace after the term ended.
type overdue struct {
	token int64     // 0: none
	ended time.Time // Clock reading when the term ended
}

// awaitLead waits for lead to return (done closed) after term ended. Past LeadGrace it
// logs lead-overdue, counts it, makes Check fail and calls OnLeadOverdue, once, and goes
// on waiting: a new term must not start while the old lead may still act.
func (l *Leadership) awaitLead(term Term, done <-chan struct{}) {
	ended := l.cfg.Clock.Now()
	t := l.cfg.Clock.NewTimer(l.cfg.LeadGrace)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C():
	}
	l.mu.Lock()
	l.overdue = overdue{token: term.Token, ended: ended}
	l.mu.Unlock()
	l.log.Error("lead-overdue", slog.Int64("token", term.Token), slog.Duration("grace", l.cfg.LeadGrace))
	l.cfg.Metrics.LeadOverdue()
	if l.cfg.OnLeadOverdue != nil {
		l.cfg.OnLeadOverdue(term)
	}
	<-done
	l.mu.Lock()
	l.overdue = overdue{}
	l.mu.Unlock()
	l.log.Warn("lead-returned-late", slog.Int64("token", term.Token),
		slog.Duration("after", l.cfg.Clock.Now().Sub(ended)))
}
