package cluster

import (
	"context"
	"errors"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
)

// Cluster is a running cluster. Node ids are "n1".."nN". Every method that talks to a
// process or the network takes ctx first. Implementations are safe for concurrent use.
type Cluster interface {
	// Nodes lists the node ids.
	Nodes() []string
	// StartNode starts a node that is not running (after StopNode or KillNode).
	StartNode(ctx context.Context, id string) error
	// StopNode stops a node gracefully (SIGTERM: it releases its lease) and waits for it.
	StopNode(ctx context.Context, id string) error
	// KillNode kills a node at once (SIGKILL) and waits for it.
	KillNode(ctx context.Context, id string) error
	// PauseNode freezes a node (SIGSTOP, or the cgroup freezer); ResumeNode thaws it.
	PauseNode(ctx context.Context, id string) error
	ResumeNode(ctx context.Context, id string) error
	// Running reports whether the node's process is up (paused counts as up).
	Running(id string) bool
	// NodeStatus asks a node's control endpoint for its state.
	NodeStatus(ctx context.Context, id string) (NodeStatus, error)
	// SetClock sets a node's injected clock: offset is a jump, rate the speed (1 = true
	// time). Only nodes started in chaos mode accept it.
	SetClock(ctx context.Context, id string, offset time.Duration, rate float64) error
	// KillRedis kills Redis (SIGKILL); StartRedis starts it again on the same address.
	KillRedis(ctx context.Context) error
	StartRedis(ctx context.Context) error
	// RedisAddr is Redis's address as the runner reaches it, bypassing every proxy.
	RedisAddr() string
	// Toxiproxy is a client of the cluster's toxiproxy API.
	Toxiproxy() *toxiproxy.Client
	// RedisProxy and SourceProxy name node id's proxies to Redis and to the source.
	RedisProxy(id string) string
	SourceProxy(id string) string
	// Close stops and removes everything the cluster started. It is idempotent.
	Close(ctx context.Context) error
}

// NodeStatus is what a node's control endpoint reports on GET /status.
type NodeStatus struct {
	ID       string `json:"id"`
	Role     string `json:"role"` // "leader" or "follower"
	Token    int64  `json:"token,omitempty"`
	Leader   string `json:"leader,omitempty"` // last leader this node saw
	Cursor   int64  `json:"cursor"`
	Variant  string `json:"variant"`
	Chaos    bool   `json:"chaos"`
	Commits  int64  `json:"commits"`
	Rejected int64  `json:"rejected"`
	// HistoryError is set when the node could not write its history (a full disk):
	// what it records from then on is lost, and the harness ends the run as unknown.
	HistoryError string `json:"history_error,omitempty"`
}

// Errors of cluster operations.
var (
	ErrUnknownNode = errors.New("cluster: unknown node")
	ErrNotRunning  = errors.New("cluster: node not running")
	ErrRunning     = errors.New("cluster: node already running")
)
