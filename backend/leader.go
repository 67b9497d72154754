package backend

import (
	"context"
	"fmt"
	"time"
)

// Leader asks every running node for its status and returns the one that leads with the
// highest token. ok is false when no node says it leads.
func Leader(ctx context.Context, c StatusReader) (id string, token int64, ok bool) {
	for _, n := range c.Nodes() {
		if !c.Running(n) {
			continue
		}
		st, err := c.NodeStatus(ctx, n)
		if err == nil && st.Role == "leader" && st.Token > token {
			id, token, ok = n, st.Token, true
		}
	}
	return id, token, ok
}

// WaitLeader polls until a node other than any in exclude leads with a token above
// minToken, or timeout passes.
func WaitLeader(ctx context.Context, c StatusReader, minToken int64, timeout time.Duration, exclude ...string) (string, int64, error) {
	deadline := time.Now().Add(timeout)
	for {
		if id, tok, ok := Leader(ctx, c); ok && tok > minToken && !contains(exclude, id) {
			return id, tok, nil
		}
		if time.Now().After(deadline) {
			return "", 0, fmt.Errorf("cluster: no new leader (token > %d, not %v) within %v", minToken, exclude, timeout)
		}
		select {
		case <-ctx.Done():
			return "", 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
