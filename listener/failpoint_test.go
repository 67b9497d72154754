//go:build failpoints

package listener

import (
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/internal/failpoint"
	"github.com/fenceline/fenceline/source"
)

// The listener's failpoints fire where documented: an error after the load or before a
// commit is retried, and an error after the commit script ran is a lost reply (recorded
// unknown, applied all the same); the listener still ingests every event exactly once.
func TestListenerFailpoints(t *testing.T) {
	const total = 200
	for name, action := range map[string]string{
		failpoint.ListenerAfterLoad: "error", failpoint.ListenerBeforeCommit: "error",
		failpoint.ListenerAfterCommitBeforeAck: "2*error",
	} {
		if _, err := failpoint.Arm(name, action); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(failpoint.DisarmAll)
	in := newIngestion(t, "fp", total)
	c, rec, store := in.c, in.rec, in.store
	l, err := New(Config[source.Event]{Store: store, Source: in.src, Metrics: in.m, BatchSize: 10, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := runUntil(t, l, 60*time.Second, "the feed ingested", func() bool { return loadCursor(t, store) == total }); err != nil {
		t.Fatal(err)
	}
	st := readState(t, c, "fp")
	checkStore(t, st)
	if n := rec.count(OpCommit, OutcomeUnknown); n != 2 {
		t.Errorf("%d commits recorded unknown, want 2 (the lost replies)", n)
	}
	for _, s := range failpoint.Status() {
		if strings.HasPrefix(s.Name, "listener/") && s.Hits == 0 {
			t.Errorf("failpoint %s never hit", s.Name)
		}
	}
}
