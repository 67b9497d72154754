package nemesis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/internal/failpoint"
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
// renewal is refused the node must step down. Its next commit is held a lease, so that
// the renewal's refusal comes before the fence's.
//
// Inject returns once Redis has no subscriber of the denied channel left (a Confirmer):
// from then until the heal begins, the node has no presence, and every acquire of its own
// that Redis runs must be refused as not present.
//
// The heal allows every channel again and closes the connections whose SUBSCRIBE to the
// denied channel Redis refused, as its ACL LOG names them (their last command may be a
// health check's PING by then), so that go-redis connects and subscribes again.
type presenceFault struct{}

func (presenceFault) Kind() string     { return faults.PresenceLoss }
func (presenceFault) AimsAtNode() bool { return true }
func (presenceFault) ConfirmsEffect()  {}

// presenceGone is how long Inject waits for Redis to drop the denied subscription when
// the step gives no lease TTL; Redis drops it as it runs the ACL change.
const presenceGone = 2 * time.Second

func (presenceFault) Inject(ctx context.Context, c Backend, target string, p Params) (string, error) {
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
	// The node's next commit is held a lease (in a failpoints build), so that the refusal
	// of its next renewal, not the fence, tells it first that its term is over: the
	// listener commits every few milliseconds, a renewal comes every third of a lease.
	held := "; its next commit held " + p.LeaseTTL.String()
	if err := c.ArmFailpoint(ctx, target, failpoint.ListenerBeforeCommit, fmt.Sprintf("sleep(%v)", p.LeaseTTL)); errors.Is(err, backend.ErrNoHook) {
		held = ""
	} else if err != nil {
		return "", fmt.Errorf("nemesis: presence-loss: %w", err)
	}
	// The release notices and every other node's presence stay allowed. The ACL LOG,
	// emptied first, will name the connections whose SUBSCRIBE is refused.
	args := []any{"ACL", "SETUSER", "default", "resetchannels", "&*:released"}
	for _, id := range c.Nodes() {
		if id != target {
			args = append(args, "&*:presence:"+globEscape(id))
		}
	}
	if err := rc.Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil {
		return "", fmt.Errorf("nemesis: presence-loss: %w", err)
	}
	if err := rc.Do(ctx, args...).Err(); err != nil {
		return "", fmt.Errorf("nemesis: presence-loss: %w", err)
	}
	if err := awaitNoSubscriber(ctx, rc, "*:presence:"+globEscape(target), cmp.Or(p.LeaseTTL, presenceGone)); err != nil {
		return "", err
	}
	return fmt.Sprintf("presence channel of %s denied to subscribers%s", target, held), nil
}

func (presenceFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	if err := c.DisarmFailpoints(ctx, target); err != nil && !errors.Is(err, backend.ErrNoHook) {
		return "", fmt.Errorf("nemesis: presence-loss: %w", err)
	}
	rc, err := adminClient(c)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	if err := rc.Do(ctx, "ACL", "SETUSER", "default", "allchannels").Err(); err != nil {
		return "", fmt.Errorf("nemesis: presence-loss: %w", err)
	}
	ids, err := refusedSubscribers(ctx, rc, target)
	if err != nil {
		return "", err
	}
	closed := 0
	for _, id := range ids {
		n, err := rc.Do(ctx, "CLIENT", "KILL", "ID", id).Int()
		if err != nil {
			return "", fmt.Errorf("nemesis: presence-loss: CLIENT KILL ID %s: %w", id, err)
		}
		closed += n // 0: closed already
	}
	return fmt.Sprintf("every channel allowed; %d connection(s) whose SUBSCRIBE was refused closed", closed), nil
}

// awaitNoSubscriber polls Redis until no channel matching pattern has a subscriber, for
// at most wait.
func awaitNoSubscriber(parent context.Context, rc *redis.Client, pattern string, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(parent, wait)
	defer cancel()
	for {
		chans, err := rc.PubSubChannels(ctx, pattern).Result()
		switch {
		case err == nil && len(chans) == 0:
			return nil
		case parent.Err() != nil:
			return fmt.Errorf("nemesis: presence-loss: %w", parent.Err())
		case ctx.Err() != nil:
			return fmt.Errorf("nemesis: presence-loss: %v after the ACL change, channels %q still have subscribers (last error: %v)", wait, chans, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// refusedSubscribers returns the ids of the connections whose SUBSCRIBE to node's presence
// channel Redis refused, from its ACL LOG: an entry's client-info is that of the latest
// refusal it counts.
func refusedSubscribers(ctx context.Context, rc *redis.Client, node string) ([]string, error) {
	v, err := rc.Do(ctx, "ACL", "LOG").Result()
	if err != nil {
		return nil, fmt.Errorf("nemesis: presence-loss: ACL LOG: %w", err)
	}
	entries, _ := v.([]any)
	var ids []string
	for _, e := range entries {
		object, _ := aclField(e, "object").(string)
		info, _ := aclField(e, "client-info").(string)
		if aclField(e, "reason") != "channel" || !strings.HasSuffix(object, ":presence:"+node) {
			continue
		}
		for _, kv := range strings.Fields(info) {
			if id, ok := strings.CutPrefix(kv, "id="); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

// aclField is a field of an ACL GETUSER reply or ACL LOG entry: a map in RESP3, pairs in
// RESP2.
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
