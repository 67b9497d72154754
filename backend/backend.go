package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fenceline/fenceline/node"
)

// Backend is what a backend provides: a running system under test (Redis, toxiproxy, the
// source and the nodes). Node ids are "n1".."nN".
// Every method that talks to a process or the network takes ctx first.
// Implementations are safe for concurrent use.
//
// Its users do not take it whole: each defines the small interface it needs
// (nemesis.Target for the faults, the harness's view for a run, StatusReader for
// Leader), so a backend is checked against what is used, and no user can reach past it
// (there is no raw toxiproxy client: links are changed through ctx-aware calls).
type Backend interface {
	// Nodes lists the node ids.
	Nodes() []string
	// StartNode starts a node that is not running (after StopNode or KillNode).
	StartNode(ctx context.Context, id string) error
	// StopNode stops a node gracefully (SIGTERM: it releases its lease) and waits for it;
	// a node that has not exited within a grace is killed, and the error is a
	// *StopTimeoutError.
	StopNode(ctx context.Context, id string) error
	// KillNode kills a node at once (SIGKILL) and waits for it.
	KillNode(ctx context.Context, id string) error
	// PauseNode freezes a node (SIGSTOP, or the cgroup freezer); ResumeNode thaws it.
	PauseNode(ctx context.Context, id string) error
	ResumeNode(ctx context.Context, id string) error
	// Running reports whether the node's process is up (paused counts as up).
	Running(id string) bool
	// NodeStatus asks a node's control endpoint for its state.
	NodeStatus(ctx context.Context, id string) (node.Status, error)
	// SetClock sets a node's injected clock: offset is a jump, rate the speed (1 = true
	// time). Only nodes started in chaos mode accept it.
	SetClock(ctx context.Context, id string, offset time.Duration, rate float64) error
	// ArmFailpoint arms a failpoint of a node (package internal/failpoint);
	// DisarmFailpoints disarms all of them. Only chaos nodes of a failpoints build accept it.
	ArmFailpoint(ctx context.Context, id, name, action string) error
	DisarmFailpoints(ctx context.Context, id string) error
	// KillRedis kills Redis (SIGKILL); StartRedis starts it again on the same address.
	KillRedis(ctx context.Context) error
	StartRedis(ctx context.Context) error
	// RedisAddr is Redis's address as the runner reaches it, bypassing every proxy.
	RedisAddr() string
	// AddRedisToxic adds a toxic to node id's link to Redis; RemoveRedisToxics removes
	// toxics by name (one that is not there is not an error); ResetLinks removes every
	// toxic of every link.
	AddRedisToxic(ctx context.Context, id string, t Toxic) error
	RemoveRedisToxics(ctx context.Context, id string, names ...string) error
	ResetLinks(ctx context.Context) error
	// Close stops and removes everything the cluster started. It is idempotent.
	Close(ctx context.Context) error
}

// StatusReader is what Leader and WaitLeader need of a cluster.
type StatusReader interface {
	Nodes() []string
	Running(id string) bool
	NodeStatus(ctx context.Context, id string) (node.Status, error)
}

// NodeStopper is what StopAll needs of a backend.
type NodeStopper interface {
	Nodes() []string
	Running(id string) bool
	StopNode(ctx context.Context, id string) error
}

// StopAll stops every running node of c gracefully (StopNode), one after the other, and
// waits for each. It tries them all and returns what failed, joined.
func StopAll(ctx context.Context, c NodeStopper) error {
	var errs []error
	for _, id := range c.Nodes() {
		if c.Running(id) {
			if err := c.StopNode(ctx, id); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// StopTimeoutError is StopNode's error when the node had not exited within Grace of its
// SIGTERM and was killed: a node that hangs in its shutdown (the reference's exits at
// once, having released its lease).
type StopTimeoutError struct {
	Node  string
	Grace time.Duration
}

func (e *StopTimeoutError) Error() string {
	return fmt.Sprintf("cluster: node %s did not exit within %v of its SIGTERM; killed", e.Node, e.Grace)
}

// Errors of cluster operations.
var (
	ErrUnknownNode = errors.New("cluster: unknown node")
	ErrNotRunning  = errors.New("cluster: node not running")
	ErrRunning     = errors.New("cluster: node already running")
)

// ErrTopology is returned (wrapped) for an operation the cluster's Redis topology does
// not have: a restart of "the" Redis when there are several, a promotion with one.
var ErrTopology = errors.New("cluster: not in this Redis topology")
