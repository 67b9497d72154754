package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/moby/moby/client"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// ErrNoEngine is matched (errors.Is) by the error returned when no Docker engine
// answers. Its text names the address tried: "docker: no Docker engine answers at ...".
var ErrNoEngine = errors.New("docker: no Docker engine answers")

type engineError struct {
	host string
	err  error
}

func (e *engineError) Error() string {
	return fmt.Sprintf("docker: no Docker engine answers at %s: %v", e.host, e.err)
}
func (e *engineError) Unwrap() error        { return e.err }
func (e *engineError) Is(target error) bool { return target == ErrNoEngine }

var setupOnce sync.Once

// setup prepares testcontainers-go before its first use in this process: no Ryuk (its
// image would have to be pulled, and there is no registry; we remove what we create
// ourselves) and no banner on stderr (our own logger reports what matters). Both are
// process-wide settings of testcontainers-go, read once.
func setup() {
	setupOnce.Do(func() {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		tclog.SetDefault(tclog.NewNoopLogger())
	})
}

// Connect returns a client of the engine that DOCKER_HOST (or the default socket) names,
// after checking that it answers.
func Connect(ctx context.Context) (*client.Client, error) {
	setup()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, &engineError{host: os.Getenv("DOCKER_HOST"), err: err}
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{}); err != nil {
		cli.Close()
		return nil, &engineError{host: cli.DaemonHost(), err: err}
	}
	return cli, nil
}

// EngineAvailable reports whether a Docker engine answers (for --backend auto).
func EngineAvailable(ctx context.Context) bool {
	cli, err := Connect(ctx)
	if err != nil {
		return false
	}
	cli.Close()
	return true
}
