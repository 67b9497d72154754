package cluster

import (
	"context"
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

func failpointRequest(ctx context.Context, method, url, body string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cluster: failpoint: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("cluster: failpoint: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return nil
}
