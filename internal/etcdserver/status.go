package etcdserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Status is what a member says of itself and of its cluster's leader.
type Status struct {
	// ID is the member's id; Leader the id of the member it follows (0: none known).
	ID, Leader uint64
}

// IsLeader reports whether the member is its cluster's raft leader.
func (s Status) IsLeader() bool { return s.Leader != 0 && s.ID == s.Leader }

// MemberStatus asks the member at addr (host:port) for its status through etcd's JSON
// gateway (POST /v3/maintenance/status), with no client library in between.
func MemberStatus(ctx context.Context, addr string) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v3/maintenance/status", strings.NewReader("{}"))
	if err != nil {
		return Status{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Status{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return Status{}, fmt.Errorf("etcdserver: %s status: %s %s", addr, resp.Status, strings.TrimSpace(string(body)))
	}
	// The gateway writes 64-bit integers as strings.
	var st struct {
		Header struct {
			MemberID uint64 `json:"member_id,string"`
		} `json:"header"`
		Leader uint64 `json:"leader,string"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return Status{}, fmt.Errorf("etcdserver: %s status: %w", addr, err)
	}
	return Status{ID: st.Header.MemberID, Leader: st.Leader}, nil
}

// ErrNoLeader is returned by Leader when no member answering names itself the leader.
var ErrNoLeader = errors.New("etcdserver: no member is the raft leader")

// Leader returns the index in addrs of the member that is the raft leader, asking each
// in turn. Members that do not answer (killed, paused) are skipped.
func Leader(ctx context.Context, addrs []string) (int, error) {
	var errs []error
	for i, a := range addrs {
		st, err := MemberStatus(ctx, a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.IsLeader() {
			return i, nil
		}
	}
	return -1, errors.Join(append([]error{ErrNoLeader}, errs...)...)
}
