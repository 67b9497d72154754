package nemesis

import (
	"context"
	"errors"
	"fmt"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
)

// TargetPostgres is the target of the PostgreSQL restart.
const TargetPostgres = "postgres"

// PostgresProcess is PostgreSQL's process, in a cluster whose store is PostgreSQL: what
// postgres-restart acts on, and what HealAll starts again. A cluster that runs no
// PostgreSQL does not implement it.
type PostgresProcess interface {
	KillPostgres(ctx context.Context) error
	// StartPostgres starts PostgreSQL if it is not running (a no-op if it is).
	StartPostgres(ctx context.Context) error
}

// PostgresLinks change a node's link to PostgreSQL.
type PostgresLinks interface {
	AddPostgresToxic(ctx context.Context, id string, t backend.Toxic) error
	RemovePostgresToxics(ctx context.Context, id string, names ...string) error
}

var errNoPostgres = errors.New("nemesis: this cluster runs no PostgreSQL (--store postgres)")

// postgresRestartFault crashes PostgreSQL (an immediate shutdown: no checkpoint, every
// backend ends, open transactions are lost) and starts it again at heal, when it replays
// its write-ahead log: no committed transaction may be lost.
type postgresRestartFault struct{}

func (postgresRestartFault) Kind() string     { return faults.PostgresRestart }
func (postgresRestartFault) AimsAtNode() bool { return false }
func (postgresRestartFault) Target() string   { return TargetPostgres }

func (postgresRestartFault) Inject(ctx context.Context, c Backend, _ string, _ Params) (string, error) {
	p, ok := c.(PostgresProcess)
	if !ok {
		return "", errNoPostgres
	}
	return "postgres: immediate shutdown (SIGQUIT)", p.KillPostgres(ctx)
}

func (postgresRestartFault) Heal(ctx context.Context, c Backend, _ string) (string, error) {
	p, ok := c.(PostgresProcess)
	if !ok {
		return "", nil
	}
	return "postgres started", p.StartPostgres(ctx)
}

// postgresPartitionFault cuts a node off from PostgreSQL (blackhole: data dropped,
// connections hang) while its link to Redis, and so its lease, stays up: the node leads
// on and its commits time out, their outcome unknown.
type postgresPartitionFault struct{}

func (postgresPartitionFault) Kind() string     { return faults.PartitionPostgres }
func (postgresPartitionFault) AimsAtNode() bool { return true }

func (postgresPartitionFault) Inject(ctx context.Context, c Backend, target string, _ Params) (string, error) {
	l, ok := c.(PostgresLinks)
	if !ok {
		return "", errNoPostgres
	}
	attrs := map[string]any{"timeout": 0}
	for _, t := range []backend.Toxic{
		{Name: toxicPartitionUp, Type: "timeout", Stream: "upstream", Toxicity: 1, Attributes: attrs},
		{Name: toxicPartitionDown, Type: "timeout", Stream: "downstream", Toxicity: 1, Attributes: attrs},
	} {
		if err := l.AddPostgresToxic(ctx, target, t); err != nil {
			return "", fmt.Errorf("nemesis: %w", err)
		}
	}
	return "postgres link: data dropped, connections hang", nil
}

func (postgresPartitionFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	l, ok := c.(PostgresLinks)
	if !ok {
		return "", nil
	}
	if err := l.RemovePostgresToxics(ctx, target, toxicPartitionUp, toxicPartitionDown); err != nil {
		return "", fmt.Errorf("nemesis: %w", err)
	}
	return "toxics removed", nil
}
