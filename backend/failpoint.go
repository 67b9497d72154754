package backend

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
	if method == http.MethodPut || method == http.MethodDelete {
		// Idempotent, so the transport may send it again when a kept-alive connection
		// turns out closed before any answer (it does so only for GETs otherwise): a
		// final heal's DELETE /failpoint met such a connection's EOF (io.EOF) under
		// twelve runs at once, and the run was left incomplete. The nil value marks it
		// without sending a header.
		req.Header["Idempotency-Key"] = nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cluster: %s: %w", what, err)
	}
	defer resp.Body.Close()
	if err := controlAnswer(what, resp); err != nil || out == nil {
		return err
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("cluster: %s: %w", what, err)
	}
	return nil
}

// ErrNoHook is matched (errors.Is) by the error of a fault hook the node does not have:
// its control endpoint answered 404, 405 or 501 (a node in another language without the
// optional /fault/clock or /failpoint, a build without failpoints). Nothing was done,
// so there is nothing to heal either.
var ErrNoHook = errors.New("the node has no such fault hook")

// controlAnswer is nil for a 200, ErrNoHook (wrapped) for a hook the node lacks, and the
// node's refusal otherwise, its reason cut to one short line: a node in another language
// may answer with a whole HTML page.
func controlAnswer(what string, resp *http.Response) error {
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch resp.StatusCode {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return fmt.Errorf("cluster: %s: %w (%s %s: %s)", what, ErrNoHook, resp.Request.Method, resp.Request.URL.Path, resp.Status)
	}
	reason := strings.Join(strings.Fields(string(b)), " ")
	if len(reason) > 160 {
		reason = reason[:160] + "…"
	}
	return fmt.Errorf("cluster: %s: %s: %s", what, resp.Status, reason)
}
