package finalread

import (
	"strconv"
	"testing"
)

// FuzzCanonicalInt: what is accepted is exactly what strconv.FormatInt writes, and
// nothing panics.
func FuzzCanonicalInt(f *testing.F) {
	for _, s := range []string{"0", "-1", "42", "2.0", "+2", "02", "-0", "1e3", "0x10", "", " 1", "9223372036854775807", "9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := canonicalInt(s)
		if err == nil && strconv.FormatInt(n, 10) != s {
			t.Fatalf("%q accepted as %d", s, n)
		}
		if err != nil && n != 0 {
			t.Fatalf("%q refused but read as %d", s, n)
		}
	})
}

// FuzzAuditEntry: any field list parses or is refused without a panic, and an accepted
// entry has every field the layout requires and a known result.
func FuzzAuditEntry(f *testing.F) {
	f.Add("1-0", "op", "x", "node", "n1", "token", "1", "from", "0", "to", "1", "result", "ok", "time", "1")
	f.Add("1-1", "op", "x", "node", "n1", "token", "2.0", "from", "0", "to", "1", "result", "bad-argument", "time", "1")
	f.Add("x", "op", "", "node", "", "token", "", "from", "", "to", "", "result", "", "time", "")
	f.Fuzz(func(t *testing.T, id, k1, v1, k2, v2, k3, v3, k4, v4, k5, v5, k6, v6, k7, v7 string) {
		fields := []any{k1, v1, k2, v2, k3, v3, k4, v4, k5, v5, k6, v6, k7, v7}
		e, err := auditEntry([]any{id, fields})
		if err != nil {
			return
		}
		if !auditResults[e.Result] || e.Result == auditBadArgument || e.Result == auditBodyError || !validStreamID(e.StreamID) {
			t.Fatalf("accepted %+v from %v", e, fields)
		}
	})
}
