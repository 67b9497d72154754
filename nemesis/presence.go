package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/faults"
)

// RedisAdmin is a cluster's one Redis, reached bypassing every proxy: what presence-loss
// acts on.
type RedisAdmin interface {
	RedisAddr() string
}

// ErrPresenceACL is returned (wrapped) by presence-loss when Redis's default user may not
// use every channel to begin with: the heal could not give back what it took.
var ErrPresenceACL = errors.New("nemesis: presence-loss needs a Redis whose default user may use every channel (&*)")

// presenceFault is presence-loss: node target's presence channel (election.PresenceChannel,
// which a node with election.Config.TakeoverOnDisconnect keeps a subscription on) is denied
// to subscribers by an ACL on the default user's channels; every other channel stays
// allowed. Redis closes the connection that holds the subscription at once. go-redis
// connects again, Redis refuses its SUBSCRIBE (NOPERM), and go-redis keeps that connection
// without subscribing again, ever: the node lives and reaches Redis on its other
// connections, but has no presence. A standby then takes its lease over, and as its next
// renewal is refused the node must step down.
//
// The heal allows every channel again and closes the connections that a refused SUBSCRIBE
// left unsubscribed (those seen at the injection, and any other whose last command was
// that SUBSCRIBE), so that go-redis connects and subscribes again.
type presenceFault struct {
	stranded []string // ids of the connections left unsubscribed, seen at the injection
}

func (*presenceFault) Kind() string     { return faults.PresenceLoss }
func (*presenceFault) AimsAtNode() bool { return true }

func (f *presenceFault) Inject(ctx context.Context, c Backend, target string, _ Params) (string, error) {
	rc, err := adminClient(c)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	user, err := rc.Do(ctx, "ACL", "GETUSER", "default").Result()
	if err != nil {
		return "", fmt.Errorf("nemesis: presence-loss: %w", err)
	}
	if aclField(user, "channels") != "&*" {
		return "", fmt.Errorf("%w (ACL GETUSER default: %v)", ErrPresenceACL, user)
	}
	// The release notices and every other node's presence stay allowed.
	args := []any{"ACL", "SETUSER", "default", "resetchannels", "&*:released"}
	for _, id := range c.Nodes() {
		if id != target {
			args = append(args, "&*:presence:"+globEscape(id))
		}
	}
	if err := rc.Do(ctx, args...).Err(); err != nil {
		return "", fmt.Errorf("nemesis: presence-loss: %w", err)
	}
	// Wait (bounded) for go-redis's refused SUBSCRIBE, to close that connection at the
	// heal even if it has pinged since.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline) && len(f.stranded) == 0; {
		if f.stranded, err = strandedSubscribers(ctx, rc); err != nil {
			return "", err
		}
		if len(f.stranded) == 0 {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return fmt.Sprintf("presence channel of %s denied to subscribers; %d connection(s) left unsubscribed", target, len(f.stranded)), nil
}

func (f *presenceFault) Heal(ctx context.Context, c Backend, _ string) (string, error) {
	rc, err := adminClient(c)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	if err := rc.Do(ctx, "ACL", "SETUSER", "default", "allchannels").Err(); err != nil {
		return "", fmt.Errorf("nemesis: presence-loss: %w", err)
	}
	more, err := strandedSubscribers(ctx, rc)
	if err != nil {
		return "", err
	}
	closed := 0
	for _, id := range append(f.stranded, more...) {
		// A connection closed already (by the node, or listed twice) is no error.
		if n, err := rc.Do(ctx, "CLIENT", "KILL", "ID", id).Int(); err == nil {
			closed += n
		} else if !strings.Contains(err.Error(), "No such client") {
			return "", fmt.Errorf("nemesis: presence-loss: CLIENT KILL ID %s: %w", id, err)
		}
	}
	return fmt.Sprintf("every channel allowed; %d unsubscribed connection(s) closed", closed), nil
}

// strandedSubscribers lists the ids of the connections whose last command was a SUBSCRIBE
// that left them subscribed to nothing: go-redis's after a refused one.
func strandedSubscribers(ctx context.Context, rc *redis.Client) ([]string, error) {
	list, err := rc.ClientList(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("nemesis: presence-loss: CLIENT LIST: %w", err)
	}
	var ids []string
	for _, line := range strings.Split(list, "\n") {
		f := map[string]string{}
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				f[k] = v
			}
		}
		if f["cmd"] == "subscribe" && f["sub"] == "0" && f["psub"] == "0" {
			ids = append(ids, f["id"])
		}
	}
	return ids, nil
}

// aclField is a field of an ACL GETUSER reply: a map in RESP3, pairs in RESP2.
func aclField(reply any, name string) any {
	switch r := reply.(type) {
	case map[any]any:
		return r[name]
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			if r[i] == name {
				return r[i+1]
			}
		}
	}
	return nil
}

// adminClient is a client of the cluster's Redis that bypasses every proxy.
func adminClient(c Backend) (*redis.Client, error) {
	a, ok := c.(RedisAdmin)
	if !ok || a.RedisAddr() == "" {
		return nil, errors.New("nemesis: presence-loss: this cluster gives no address of its Redis")
	}
	return election.NewClient(a.RedisAddr()), nil
}

// globEscape escapes what a Redis glob pattern would read as a wildcard.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(s)
}
