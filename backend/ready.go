package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/fenceline/fenceline/internal/redisserver"
)

// DefaultNodes is the number of nodes of a cluster whose spec gives none, in every
// backend and in the harness.
const DefaultNodes = 3

// WithDefaults returns s with its defaults filled in (DefaultNodes), or an error saying
// what is wrong with it.
func (s Spec) WithDefaults() (Spec, error) {
	if s.Dir == "" {
		return s, errors.New("cluster: Spec.Dir is required")
	}
	if s.Nodes == 0 {
		s.Nodes = DefaultNodes
	}
	if s.Nodes < 1 {
		return s, fmt.Errorf("cluster: %d nodes", s.Nodes)
	}
	if s.SourceRate < 0 {
		return s, fmt.Errorf("cluster: source rate %g < 0", s.SourceRate)
	}
	if s.Redis.Topology == "" {
		s.Redis.Topology = TopologySingle
	}
	if err := s.Redis.Validate(); err != nil {
		return s, err
	}
	switch {
	case s.RedlockServers < 0:
		return s, fmt.Errorf("cluster: %d Redlock servers", s.RedlockServers)
	case s.RedlockServers > 0 && s.Redis.Replicated():
		return s, fmt.Errorf("cluster: Redlock servers beside the %s topology: the single topology only", s.Redis.Topology)
	}
	if s.EtcdMembers == 0 && s.Node.UsesEtcd() {
		s.EtcdMembers = 1
	}
	if err := ValidateEtcdMembers(s.EtcdMembers); err != nil {
		return s, err
	}
	return s, nil
}

// ErrExited is returned (wrapped) by WaitReady when the process or container exited
// before it answered.
var ErrExited = errors.New("cluster: exited at start")

// WaitReady polls probe every 25ms until it answers nil. It gives up when exited closes
// (ErrExited), when ctx ends, or after timeout (the error then says what and the last
// error of a probe that ended before the timeout: one the timeout cut short says only
// that). exited may be nil. It blocks for at most timeout.
func WaitReady(ctx context.Context, what string, timeout time.Duration, exited <-chan struct{}, probe func(context.Context) error) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		err := probe(wctx)
		if err == nil {
			return nil
		}
		if wctx.Err() == nil || last == nil {
			last = err
		}
		err = last
		select {
		case <-exited:
			return fmt.Errorf("%w: %s", ErrExited, what)
		case <-wctx.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("cluster: waiting for %s: %w", what, ctx.Err())
			}
			return fmt.Errorf("cluster: %s did not answer within %v: %w", what, timeout, err)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// UnhealthyError is ProbeHTTP's error when the server answered, but not 200: a node that
// is up and says it is not ready (its /health body gives the reason).
type UnhealthyError struct{ URL, Status string }

func (e *UnhealthyError) Error() string { return fmt.Sprintf("GET %s: %s", e.URL, e.Status) }

// ProbeHTTP answers nil when GET url answers 200 within a second.
func ProbeHTTP(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &UnhealthyError{URL: url, Status: resp.Status}
	}
	return nil
}

// PingRedis answers nil when Redis at addr answers PING with PONG (not LOADING), with no
// client library in between; it blocks for at most a second past a dial.
func PingRedis(ctx context.Context, addr string) error { return redisserver.Ping(ctx, addr) }
