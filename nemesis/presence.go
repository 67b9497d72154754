package nemesis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
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
	if err := presenceACL(ctx, rc); err != nil {
		return "", err
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
	if err := denyPresence(ctx, rc, c, target, cmp.Or(p.LeaseTTL, presenceGone)); err != nil {
		return "", err
	}
	return fmt.Sprintf("presence channel of %s denied to subscribers%s", target, held), nil
}

// presenceACL returns ErrPresenceACL unless Redis's default user may use every channel:
// the heal could not give back what the fault took.
func presenceACL(ctx context.Context, rc *redis.Client) error {
	user, err := rc.Do(ctx, "ACL", "GETUSER", "default").Result()
	if err != nil {
		return fmt.Errorf("nemesis: presence: %w", err)
	}
	if aclField(user, "channels") != "&*" {
		return fmt.Errorf("%w (ACL GETUSER default: %v)", ErrPresenceACL, user)
	}
	return nil
}

// denyPresence denies node target's presence channel to subscribers, and returns once
// Redis has no subscriber of it left (for at most wait). The release notices and every
// other node's presence stay allowed. The ACL LOG, emptied first, will name the
// connections whose SUBSCRIBE is refused (allowPresence closes them).
func denyPresence(ctx context.Context, rc *redis.Client, c Backend, target string, wait time.Duration) error {
	args := []any{"ACL", "SETUSER", "default", "resetchannels", "&*:released"}
	for _, id := range c.Nodes() {
		if id != target {
			args = append(args, "&*:presence:"+globEscape(id))
		}
	}
	if err := rc.Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil {
		return fmt.Errorf("nemesis: presence: %w", err)
	}
	if err := rc.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("nemesis: presence: %w", err)
	}
	return awaitSubscribers(ctx, rc, "*:presence:"+globEscape(target), false, wait)
}

// allowPresence allows every channel again and closes the connections whose SUBSCRIBE
// to node target's presence channel Redis refused, as its ACL LOG names them (their
// last command may be a health check's PING by then), so that go-redis connects and
// subscribes again. It returns how many it closed (one closed already counts nothing).
func allowPresence(ctx context.Context, rc *redis.Client, target string) (int, error) {
	if err := rc.Do(ctx, "ACL", "SETUSER", "default", "allchannels").Err(); err != nil {
		return 0, fmt.Errorf("nemesis: presence: %w", err)
	}
	ids, err := refusedSubscribers(ctx, rc, target)
	if err != nil {
		return 0, err
	}
	closed := 0
	for _, id := range ids {
		n, err := rc.Do(ctx, "CLIENT", "KILL", "ID", id).Int()
		if err != nil {
			return closed, fmt.Errorf("nemesis: presence: CLIENT KILL ID %s: %w", id, err)
		}
		closed += n
	}
	return closed, nil
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
	closed, err := allowPresence(ctx, rc, target)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("every channel allowed; %d connection(s) whose SUBSCRIBE was refused closed", closed), nil
}

// awaitSubscribers polls Redis, for at most wait, until a channel matching pattern has
// a subscriber (want true) or none has (want false).
func awaitSubscribers(parent context.Context, rc *redis.Client, pattern string, want bool, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(parent, wait)
	defer cancel()
	for {
		chans, err := rc.PubSubChannels(ctx, pattern).Result()
		switch {
		case err == nil && (len(chans) > 0) == want:
			return nil
		case parent.Err() != nil:
			return fmt.Errorf("nemesis: presence: %w", parent.Err())
		case ctx.Err() != nil && want:
			return fmt.Errorf("nemesis: presence: %v after the ACL change, no channel %q has a subscriber (last error: %v)", wait, pattern, err)
		case ctx.Err() != nil:
			return fmt.Errorf("nemesis: presence: %v after the ACL change, channels %q still have subscribers (last error: %v)", wait, chans, err)
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
		return nil, fmt.Errorf("nemesis: presence: ACL LOG: %w", err)
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
		return nil, errors.New("nemesis: presence: this cluster gives no address of its Redis")
	}
	return election.NewClient(a.RedisAddr()), nil
}

// globEscape escapes what a Redis glob pattern would read as a wildcard.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(s)
}

// presenceFlapFault is presence-flap, for nodes that take over on disconnect: node
// target's presence vanishes just long enough for every standby's poll to see it gone,
// and comes back while they stall before their takeover (the failpoint
// TakeoverBetweenSteps, a lease). So each takeover script runs while the holder, alive
// and renewing, is present again: it must find the subscriber and leave the lock alone
// (the reference's script counts it in the same step as its SET). A script that trusts
// the poll takes a live, present holder's lease.
//
// Inject arms the other running nodes, denies the presence (as presence-loss does) until
// Redis has no subscriber of it, waits flapSeen, gives it back and waits until Redis
// counts a subscriber again, then notes a watermark: the id of a connection opened after
// that (Redis numbers connections in the order it accepts them). It returns nil only
// then (a Confirmer): the presence is back. Sustained then tells whether it stayed: the
// channel still has a subscriber, and no subscribing connection is newer than the
// watermark (go-redis subscribes again only on a new connection), so the one counted
// when Inject returned is the one counted now. If it did not stay, the harness records
// no interval, and no check judges the takeovers of the time.
type presenceFlapFault struct {
	watermark int64 // a connection id newer than the subscription Inject saw come back; 0 before
}

// flapSeen is how long the presence stays gone once Redis has dropped it: several of a
// standby's polls (election.DefaultPresenceInterval), so that each has seen it gone.
const flapSeen = 5 * election.DefaultPresenceInterval

func (*presenceFlapFault) Kind() string     { return faults.PresenceFlap }
func (*presenceFlapFault) AimsAtNode() bool { return true }
func (*presenceFlapFault) ConfirmsEffect()  {}

func (f *presenceFlapFault) Inject(ctx context.Context, c Backend, target string, p Params) (string, error) {
	lease := cmp.Or(p.LeaseTTL, presenceGone)
	rc, err := adminClient(c)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	if err := presenceACL(ctx, rc); err != nil {
		return "", err
	}
	stall := fmt.Sprintf("sleep(%v)", lease)
	var armed []string
	for _, id := range c.Nodes() {
		if id == target || !c.Running(id) {
			continue
		}
		if err := c.ArmFailpoint(ctx, id, failpoint.TakeoverBetweenSteps, stall); err != nil {
			return strings.Join(armed, ", "), fmt.Errorf("nemesis: presence-flap: %w", err)
		}
		armed = append(armed, id+" "+failpoint.TakeoverBetweenSteps+"="+stall)
	}
	did := strings.Join(armed, ", ")
	if err := denyPresence(ctx, rc, c, target, lease); err != nil {
		return did, err
	}
	select {
	case <-ctx.Done():
		return did, ctx.Err()
	case <-time.After(flapSeen):
	}
	if _, err := allowPresence(ctx, rc, target); err != nil {
		return did, err
	}
	channel := "*:presence:" + globEscape(target)
	// Back before the standbys' stall ends, or their scripts may rightly take over.
	if err := awaitSubscribers(ctx, rc, channel, true, lease/2); err != nil {
		return did, err
	}
	wc, err := adminClient(c) // a connection newer than the subscription
	if err != nil {
		return did, err
	}
	defer wc.Close()
	w, err := wc.Do(ctx, "CLIENT", "ID").Int64()
	if err != nil {
		return did, fmt.Errorf("nemesis: presence-flap: CLIENT ID: %w", err)
	}
	// Still counted after the watermark: a subscription that dropped and came back
	// before it would be on a connection older than the watermark, and missed.
	if err := awaitSubscribers(ctx, rc, channel, true, lease/2); err != nil {
		return did, err
	}
	f.watermark = w
	return fmt.Sprintf("%s; presence of %s denied until Redis dropped it, for %v more, then back", did, target, flapSeen), nil
}

// Sustained reports whether target's presence stayed since Inject returned: its channel
// has a subscriber, and every subscribing connection is older than the watermark.
func (f *presenceFlapFault) Sustained(ctx context.Context, c Backend, target string) (bool, error) {
	if f.watermark == 0 {
		return false, nil
	}
	rc, err := adminClient(c)
	if err != nil {
		return false, err
	}
	defer rc.Close()
	chans, err := rc.PubSubChannels(ctx, "*:presence:"+globEscape(target)).Result()
	if err != nil || len(chans) == 0 {
		return false, err
	}
	list, err := rc.ClientList(ctx).Result()
	if err != nil {
		return false, fmt.Errorf("nemesis: presence-flap: CLIENT LIST: %w", err)
	}
	return newestSubscriber(list) < f.watermark, nil
}

// Heal disarms every running node's failpoints and gives the presence back (what Inject
// did, should it have stopped before).
func (f *presenceFlapFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	var errs []error
	for _, id := range c.Nodes() {
		if c.Running(id) {
			if err := c.DisarmFailpoints(ctx, id); err != nil && !errors.Is(err, backend.ErrNoHook) {
				errs = append(errs, err)
			}
		}
	}
	rc, err := adminClient(c)
	if err != nil {
		return "", errors.Join(append(errs, err)...)
	}
	defer rc.Close()
	if _, err := allowPresence(ctx, rc, target); err != nil {
		errs = append(errs, err)
	}
	return "disarmed; every channel allowed", errors.Join(errs...)
}

// newestSubscriber is the highest id of a connection in a CLIENT LIST reply that
// subscribes to a channel (sub=N, N > 0), 0 if none does.
func newestSubscriber(list string) int64 {
	var newest int64
	for _, line := range strings.Split(list, "\n") {
		var id int64
		sub := false
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "id":
				id, _ = strconv.ParseInt(v, 10, 64)
			case "sub":
				sub = v != "0"
			}
		}
		if sub {
			newest = max(newest, id)
		}
	}
	return newest
}
