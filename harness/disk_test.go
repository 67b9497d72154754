package harness_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testbin"
)

// smallDisk mounts a tmpfs of size bytes for the test: a disk that fills up.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root (CI runs as root)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// A disk that fills up during a run: the nodes cannot write their histories, and the
// run ends promptly as incomplete with that reason; what was recorded stays readable,
// and no temporary file is left.
func TestFullDiskEndsRun(t *testing.T) {
	disk := smallDisk(t, "3m")
	cfg := config(t, testbin.Fenceline(t), 2*time.Minute, 11)
	cfg.Dir = filepath.Join(disk, "run")
	cfg.Nemeses = nil
	cfg.MinFreeDisk = -1 // the write errors themselves must end the run
	cfg.Workload.SourceRate = 0
	begin := time.Now()
	err := harness.Run(context.Background(), cfg)
	took := time.Since(begin)
	t.Logf("the run ended after %v: %v", took.Round(time.Millisecond), err)
	if !errors.Is(err, harness.ErrIncomplete) {
		t.Fatalf("err = %v, want ErrIncomplete", err)
	}
	if !strings.Contains(err.Error(), "no space left") && !strings.Contains(err.Error(), "disk") {
		t.Errorf("the reason does not say the disk is full: %v", err)
	}
	if took > 100*time.Second {
		t.Errorf("the run took %v to end on a full disk", took)
	}
	tmps, _ := filepath.Glob(filepath.Join(cfg.Dir, "*.tmp"))
	if len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	run, err := history.LoadRun(cfg.Dir)
	if err != nil {
		t.Fatalf("the partial run cannot be read: %v", err)
	}
	if run.Info.Interrupted == "" {
		t.Errorf("run.json does not say the run is incomplete")
	}
	assertNothingLeft(t, cfg.Dir)
}

// The harness does not wait for the disk to overflow: below MinFreeDisk free bytes the
// run ends at once.
func TestLowDiskEndsRun(t *testing.T) {
	disk := smallDisk(t, "32m")
	cfg := config(t, testbin.Fenceline(t), time.Minute, 12)
	cfg.Dir = filepath.Join(disk, "run")
	cfg.Nemeses = nil
	cfg.MinFreeDisk = 64 << 20
	err := harness.Run(context.Background(), cfg)
	if !errors.Is(err, harness.ErrIncomplete) || !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("err = %v, want ErrIncomplete saying the disk is full", err)
	}
	assertNothingLeft(t, cfg.Dir)
}
