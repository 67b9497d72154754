package reports

import (
	"strings"
	"testing"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

func TestRedisLostWrites(t *testing.T) {
	invalid := &checker.Result{Verdict: checker.Invalid}
	failover := []history.Event{{Type: history.Invoke, Kind: history.KindFault, Fault: "redis-failover"}}
	acq := func(id, node string, tok int64) []history.Event {
		return []history.Event{{ID: id, Type: history.Invoke, Kind: history.KindAcquire, Node: node},
			{ID: id, Type: history.OK, Kind: history.KindAcquire, Node: node, Token: tok}}
	}
	reissued := append(acq("a", "n1", 2), acq("b", "n2", 2)...)
	store := &history.Store{TokenCounter: 2, Cursor: 20, Audit: []history.AuditEntry{{Op: "c1", To: 20, Token: 2, Result: "ok"}}}
	lostRead := append(acq("a", "n1", 2), history.Event{ID: "l", Type: history.OK, Kind: history.KindLoad, Node: "n1", Cursor: 40, Token: 2})
	for _, tc := range []struct {
		name string
		run  *history.Run
		res  *checker.Result
		want string // "" = no label
	}{
		{"reissued token", &history.Run{Events: history.Pack(reissued), Faults: failover, Store: store}, invalid, "token 2 was acknowledged to n1 and again to n2"},
		{"lost read", &history.Run{Events: history.Pack(lostRead), Faults: failover, Store: store}, invalid, "read cursor 40"},
		{"no Redis fault", &history.Run{Events: history.Pack(reissued), Store: store}, invalid, ""},
		{"valid run", &history.Run{Events: history.Pack(reissued), Faults: failover, Store: store}, &checker.Result{Verdict: checker.Valid}, ""},
		{"no evidence", &history.Run{Events: history.Pack(acq("a", "n1", 2)), Faults: failover, Store: store}, invalid, ""},
	} {
		why, ok := RedisLostWrites(tc.run, tc.res)
		if ok != (tc.want != "") || !strings.Contains(why, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.name, why, ok, tc.want)
		}
	}
}
