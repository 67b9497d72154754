package main

import (
	"context"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
)

// TestStatusRefusesAMalformedCursorRecord: status reads the cursor record with the
// judge's strict reader, so a record without its token field, or with "2.0", is an
// error (exit 3) naming the field, never a 0 printed as if true.
func TestStatusRefusesAMalformedCursorRecord(t *testing.T) {
	srv := redisserver.New(t)
	ctx := context.Background()
	c := election.NewClient(srv.Addr())
	defer c.Close()
	for _, tc := range []struct {
		fields []any
		want   string
	}{
		{[]any{"cursor", "5"}, `field "token" missing`},
		{[]any{"cursor", "5", "token", "2.0"}, `"2.0" is not a canonical decimal integer`},
	} {
		c.Del(ctx, "{fenceline}:cursor")
		if err := c.HSet(ctx, "{fenceline}:cursor", tc.fields...).Err(); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCmd("status", "--redis", srv.Addr())
		if code != exitUnknown || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 3 and one line with %q", tc.fields, code, stdout, stderr, tc.want)
		}
	}
}
