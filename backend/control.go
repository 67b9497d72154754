package backend

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fenceline/fenceline/node"
)

// GetStatus reads a node's /status from its control endpoint.
func GetStatus(ctx context.Context, control string) (node.Status, error) {
	var st node.Status
	err := controlDo(ctx, "status", 2*time.Second, http.MethodGet, "http://"+control+"/status", "", &st)
	return st, err
}

// PostClock sets a node's injected clock through its control endpoint.
func PostClock(ctx context.Context, control string, offset time.Duration, rate float64) error {
	q := url.Values{"offset": {offset.String()}, "rate": {strconv.FormatFloat(rate, 'f', -1, 64)}}
	return controlRequest(ctx, "clock", 2*time.Second, http.MethodPost, "http://"+control+"/fault/clock?"+q.Encode(), "")
}
