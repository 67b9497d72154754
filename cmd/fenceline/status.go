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
	name := fs.String("election", election.DefaultName, "election name")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for Redis")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	c, err := conn.Client()
	if err != nil {
		fmt.Fprintf(stderr, "fenceline status: %v\n", err)
		return exitUsage
	}
	redis.SetLogger(redisconn.Discard{})
	defer c.Close()
	addr := &conn.Addr
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	info, err := election.Leader(ctx, c, *name)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline status: %s: %v\n", *addr, err)
		return exitUnknown
	}
	out := statusOutput{Election: *name, TokenCounter: info.Counter}
	if info.Held {
		out.Leader, out.Token, out.LeaseTTLms = info.Instance, info.Token, info.TTL.Milliseconds()
	}
	// The judge's strict reader: a malformed cursor record is an error, never a 0.
	out.Cursor, out.MaxToken, err = finalread.ReadCursorRecord(ctx, c, *name)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline status: %s: %v\n", *addr, err)
		return exitUnknown
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
	return exitOK
}
