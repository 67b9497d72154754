package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/harness/finalread"
	"github.com/fenceline/fenceline/node"
	"github.com/fenceline/fenceline/node/redisconn"
)

// statusOutput is what `fenceline status` prints.
type statusOutput struct {
	Election     string `json:"election"`
	Leader       string `json:"leader"` // "" when no lease is held
	Token        int64  `json:"token,omitempty"`
	LeaseTTLms   int64  `json:"lease_ttl_ms,omitempty"`
	TokenCounter int64  `json:"token_counter"`
	Cursor       int64  `json:"cursor"`
	MaxToken     int64  `json:"max_accepted_token"`
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	conn := redisconn.Add(fs)
	name := fs.String("election", election.DefaultName, "election name (no braces)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for Redis (> 0)")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	err := node.CheckElection(*name)
	if err == nil && *timeout <= 0 {
		err = fmt.Errorf("need --timeout > 0 (got %v)", *timeout)
	}
	var c redis.UniversalClient
	if err == nil {
		// Before the client: its pool dials its idle connections at once, and a
		// failed dial logs in go-redis's own format.
		redis.SetLogger(redisconn.Discard{})
		c, err = conn.Client()
	}
	if err != nil {
		fmt.Fprintf(stderr, "fenceline status: %v\n", err)
		return exitUsage
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	out := statusOutput{Election: *name}
	info, err := election.Leader(ctx, c, *name)
	if err == nil {
		// The judge's strict reader: a malformed cursor record is an error, never a 0.
		out.Cursor, out.MaxToken, err = finalread.ReadCursorRecord(ctx, c, *name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fenceline status: %s: %v\n", conn.Addr, err)
		return exitUnknown
	}
	out.TokenCounter = info.Counter
	if info.Held {
		out.Leader, out.Token, out.LeaseTTLms = info.Instance, info.Token, info.TTL.Milliseconds()
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
	return exitOK
}
