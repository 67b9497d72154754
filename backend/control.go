package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fenceline/fenceline/node"
)

// GetStatus reads a node's /status from its control endpoint.
func GetStatus(ctx context.Context, control string) (node.Status, error) {
	var st node.Status
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+control+"/status", nil)
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, fmt.Errorf("cluster: status: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("cluster: status: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// PostClock sets a node's injected clock through its control endpoint.
func PostClock(ctx context.Context, control string, offset time.Duration, rate float64) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	q := url.Values{"offset": {offset.String()}, "rate": {strconv.FormatFloat(rate, 'f', -1, 64)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+control+"/fault/clock?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cluster: clock: %w", err)
	}
	defer resp.Body.Close()
	return controlAnswer("clock", resp)
}
