package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/moby/moby/client"
)

// Labels on every container and network of a run.
const (
	// LabelRun carries the run id: `docker ps -a --filter label=fenceline.run=<id>`.
	LabelRun = "fenceline.run"
	// LabelRole is "redis", "toxiproxy", "source", a node id or "network".
	LabelRole = "fenceline.role"
)

// RemoveRuns removes every container and network labelled with run id runID, or of every
// fenceline run when runID is "": what a runner killed with SIGKILL left behind. docker.Images
// are kept. It returns how many objects it removed.
func RemoveRuns(ctx context.Context, runID string) (int, error) {
	cli, err := Connect(ctx)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	return RemoveRun(ctx, cli, runID)
}

// RemoveRun is RemoveRuns on a client the caller owns.
func RemoveRun(ctx context.Context, cli *client.Client, runID string) (int, error) {
	label := LabelRun
	if runID != "" {
		label += "=" + runID
	}
	f := make(client.Filters).Add("label", label)
	removed := 0
	var errs []error
	// A create that was in flight when a start was cancelled can land after the first
	// listing: list again until a pass finds nothing (a few passes at most).
	for pass := 0; pass < 4; pass++ {
		if pass > 0 {
			time.Sleep(250 * time.Millisecond)
		}
		errs = errs[:0]
		found := 0
		cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
		if err != nil {
			return removed, fmt.Errorf("docker: list containers: %w", err)
		}
		for _, ct := range cs.Items {
			found++
			if _, err := cli.ContainerRemove(ctx, ct.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
				errs = append(errs, fmt.Errorf("docker: remove container %s: %w", ct.ID[:12], err))
			} else {
				removed++
			}
		}
		ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
		if err != nil {
			return removed, fmt.Errorf("docker: list networks: %w", err)
		}
		for _, n := range ns.Items {
			found++
			if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("docker: remove network %s: %w", n.Name, err))
			} else {
				removed++
			}
		}
		if found == 0 && pass > 0 {
			break
		}
	}
	return removed, errors.Join(errs...)
}
