package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// PutFailpoint arms failpoint name with action on the node whose control endpoint is
// control (PUT /failpoint/NAME; a chaos node of a failpoints build). The node's refusal
// (an unknown name, a bad action, a build without failpoints) is returned with its reason.
func PutFailpoint(ctx context.Context, control, name, action string) error {
	return failpointRequest(ctx, http.MethodPut, "http://"+control+"/failpoint/"+name, action)
}

// DeleteFailpoints disarms every failpoint of a node and releases the hits they block.
func DeleteFailpoints(ctx context.Context, control string) error {
	return failpointRequest(ctx, http.MethodDelete, "http://"+control+"/failpoint", "")
}

// FailpointHits reads how many times each failpoint of the node whose control endpoint
// is control has run an action since the process began (GET /failpoint).
func FailpointHits(ctx context.Context, control string) (map[string]int64, error) {
	var states []struct {
		Name string `json:"name"`
		Hits int64  `json:"hits"`
	}
	if err := controlDo(ctx, "failpoint", 2*time.Second, http.MethodGet, "http://"+control+"/failpoint", "", &states); err != nil {
		return nil, err
	}
	hits := make(map[string]int64, len(states))
	for _, s := range states {
		hits[s.Name] = s.Hits
	}
	return hits, nil
}

func failpointRequest(ctx context.Context, method, url, body string) error {
	return controlRequest(ctx, "failpoint", 2*time.Second, method, url, body)
}

// controlRequest sends one request to a control API of the harness (a node's control
// endpoint, the bus relays) and wants 200; what names the API in errors.
func controlRequest(ctx context.Context, what string, timeout time.Duration, method, url, body string) error {
	return controlDo(ctx, what, timeout, method, url, body, nil)
}

// controlDo is controlRequest that decodes the reply's JSON (up to 1 MiB) into out, if
// out is not nil.
func controlDo(ctx context.Context, what string, timeout time.Duration, method, url, body string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cluster: %s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("cluster: %s: %s: %s", what, resp.Status, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("cluster: %s: %w", what, err)
	}
	return nil
}
