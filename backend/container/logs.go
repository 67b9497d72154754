package container

import (
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// logFile is one container's log file in the run directory. A container that is
// restarted keeps its log in the engine, and each incarnation is followed by a new
// stream that starts where the last line written left off: lines carry the engine's
// timestamps, and a line not later than the last one written is a line already written.
type logFile struct {
	mu      sync.Mutex
	f       *os.File
	last    time.Time
	partial []byte
	done    chan struct{} // closed when the current follower ends; nil before the first
}

func openLog(path string) (*logFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &logFile{f: f}, nil
}

// Write takes the demultiplexed stream: lines prefixed with an RFC 3339 timestamp.
func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(l.partial[:i+1])
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

func (l *logFile) line(b []byte) {
	ts, rest, ok := strings.Cut(string(b), " ")
	t, err := time.Parse(time.RFC3339Nano, ts)
	if !ok || err != nil {
		_, _ = l.f.Write(b) // not a timestamped line: keep it as it is
		return
	}
	if !t.After(l.last) {
		return
	}
	l.last = t
	_, _ = l.f.WriteString(rest)
}

func (l *logFile) since() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last.IsZero() {
		return ""
	}
	return l.last.Format(time.RFC3339Nano)
}

func (l *logFile) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.line(append(l.partial, '\n'))
		l.partial = nil
	}
	_ = l.f.Close()
}

// follow streams the current incarnation of container id into l until it stops or ctx
// ends. It waits for the previous incarnation's stream first (bounded), so lines stay in
// order. The goroutine is tracked by wg.
func (l *logFile) follow(ctx context.Context, wg *sync.WaitGroup, cli *client.Client, id string) {
	l.mu.Lock()
	prev := l.done
	done := make(chan struct{})
	l.done = done
	l.mu.Unlock()
	wg.Go(func() {
		defer close(done)
		if prev != nil {
			select {
			case <-prev:
			case <-time.After(5 * time.Second):
			case <-ctx.Done():
				return
			}
		}
		rc, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{
			ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true, Since: l.since(),
		})
		if err != nil {
			return
		}
		defer rc.Close()
		_, _ = stdcopy.StdCopy(l, l, rc)
	})
}

// wait waits until the current follower has ended, at most d.
func (l *logFile) wait(d time.Duration) {
	l.mu.Lock()
	done := l.done
	l.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-time.After(d):
	}
}

// tail returns the last lines of a container's log, for an error message.
func tail(ctx context.Context, cli *client.Client, id string, n int) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rc, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{
		ShowStdout: true, ShowStderr: true, Tail: strconv.Itoa(n),
	})
	if err != nil {
		return ""
	}
	defer rc.Close()
	var b bytes.Buffer
	_, _ = stdcopy.StdCopy(&b, &b, io.LimitReader(rc, 64<<10))
	return strings.TrimSpace(b.String())
}
