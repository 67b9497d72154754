package election

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// store is what the elector needs from Redis. The Redis implementation is redisStore;
// unit tests plug in an in-memory one.
type store interface {
	// acquire runs the acquire script once (never re-sent).
	acquire(ctx context.Context, instance string, ttl time.Duration) (acquireReply, error)
	// takeover runs the acquire script once, also taking the lock if it holds holder and
	// nobody listens on holder's presence channel (Config.TakeoverOnDisconnect).
	takeover(ctx context.Context, instance string, ttl time.Duration, holder string) (acquireReply, error)
	// present reads the lock's value and whether anybody listens on the presence channel
	// of holder, the lock value a standby found (one atomic read).
	present(ctx context.Context, holder string) (value string, listened bool, err error)
	// renew extends the lease if the lock holds value; ok is false if it does not.
	renew(ctx context.Context, value string, ttl time.Duration) (ok bool, err error)
	// release deletes the lock and publishes value if the lock holds value.
	release(ctx context.Context, value string) (ok bool, err error)
	// subscribe starts listening for release notices, and also on the presence channel
	// of instance if instance is not "". It returns once subscribed, or once ctx is done
	// (the subscription then keeps trying in the background).
	subscribe(ctx context.Context, instance string) subscription
}

type acquireReply struct {
	won      bool
	token    int64         // if won
	tookOver bool          // if won: from a holder without presence (takeover)
	absent   bool          // not won: the own presence channel has no listener yet
	holder   string        // lock value found, if not won
	pttl     time.Duration // remaining TTL of the lock found, if not won; < 0 if none
}

// subscription delivers release notices, coalesced: a receive means "at least one notice
// since the last receive".
type subscription interface {
	C() <-chan struct{}
	// Close ends the subscription and waits for its goroutine.
	Close()
}

// Lua scripts. Each touches only keys under one hash tag. Time stands still inside a
// script, so each one is a single atomic step.
var (
	// KEYS: lock, counter. ARGV: instance, ttl (ms), the instance's own presence channel
	// (or ''), and for a takeover the holder's lock value and presence channel (or '').
	// SET NX PX of "<instance>:<token>" where token is the counter's next value, or for a
	// takeover SET XX PX if the lock holds that value and PUBSUB NUMSUB counts nobody on
	// the holder's channel; INCR of the counter only if the SET succeeded. With an own
	// channel, nothing is taken while nobody listens on it: a lease is only ever held with
	// its holder's presence visible, so that its vanishing means a closed connection.
	// Returns {1, token, took over (0 or 1)}, {0, holder, pttl} (held), or
	// {-1, holder, pttl} (the own presence is not visible yet).
	acquireScript = redis.NewScript(`
local c = redis.call('GET', KEYS[2]) or '0'
if not string.match(c, '^%d+$') or (#c > 1 and string.sub(c, 1, 1) == '0') or #c > 19 or (#c == 19 and c >= '9223372036854775807') then
  return redis.error_reply('ERR token counter ' .. KEYS[2] .. ' is not a decimal integer below 2^63-1')
end
local i, tail = #c, ''
while i >= 1 and string.sub(c, i, i) == '9' do
  tail, i = '0' .. tail, i - 1
end
local token
if i == 0 then
  token = '1' .. tail
else
  token = string.sub(c, 1, i - 1) .. string.char(string.byte(c, i) + 1) .. tail
end
if ARGV[3] ~= '' and redis.call('PUBSUB', 'NUMSUB', ARGV[3])[2] == 0 then
  return {-1, redis.call('GET', KEYS[1]) or '', redis.call('PTTL', KEYS[1])}
end
local value, took = ARGV[1] .. ':' .. token, 0
local won = redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[2])
if not won and ARGV[4] ~= '' and redis.call('GET', KEYS[1]) == ARGV[4] and redis.call('PUBSUB', 'NUMSUB', ARGV[5])[2] == 0 then
  won, took = redis.call('SET', KEYS[1], value, 'XX', 'PX', ARGV[2]), 1
end
if won then
  redis.call('INCR', KEYS[2]) -- = token: nothing runs between the GET and here
  return {1, token, took}
end
return {0, redis.call('GET', KEYS[1]) or '', redis.call('PTTL', KEYS[1])}
`)
	// KEYS: lock. ARGV: value, ttl (ms). Returns 1 if extended, 0 if not ours.
	renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`)
	// KEYS: lock. ARGV: value, channel. Returns 1 if released, 0 if not ours.
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[1])
  return 1
end
return 0
`)
	// KEYS: lock. ARGV: a presence channel. Returns {value or '', listeners}. A script,
	// not a bare PUBSUB, so that a Redis Cluster client sends it to the lock's primary,
	// the node where the holder subscribed (a subscription is counted on its node only).
	presenceScript = redis.NewScript(`
return {redis.call('GET', KEYS[1]) or '', redis.call('PUBSUB', 'NUMSUB', ARGV[1])[2]}
`)
	// KEYS: lock, counter. Returns {value or '', pttl, counter or '0'}.
	infoScript = redis.NewScript(`
return {redis.call('GET', KEYS[1]) or '', redis.call('PTTL', KEYS[1]), redis.call('GET', KEYS[2]) or '0'}
`)
)

type redisStore struct {
	c    redis.UniversalClient
	name string
	// presence: Config.TakeoverOnDisconnect; an acquire requires the own presence.
	presence bool
	lock     string
	token    string
	channel  string
	timeout  time.Duration // bounds the wait for the subscription's confirmation
}

func newRedisStore(c redis.UniversalClient, name string, timeout time.Duration, presence bool) *redisStore {
	return &redisStore{c: c, name: name, presence: presence, lock: LockKey(name), token: TokenKey(name),
		channel: ReleaseChannel(name), timeout: timeout}
}

func (s *redisStore) acquire(ctx context.Context, instance string, ttl time.Duration) (acquireReply, error) {
	return s.runAcquire(ctx, instance, ttl, "", "")
}

func (s *redisStore) takeover(ctx context.Context, instance string, ttl time.Duration, holder string) (acquireReply, error) {
	hi, _, err := ParseLockValue(holder)
	if err != nil {
		return acquireReply{}, err
	}
	return s.runAcquire(ctx, instance, ttl, holder, PresenceChannel(s.name, hi))
}

func (s *redisStore) present(ctx context.Context, holder string) (string, bool, error) {
	hi, _, err := ParseLockValue(holder)
	if err != nil {
		return "", false, err
	}
	v, err := presenceScript.Run(ctx, s.c, []string{s.lock}, PresenceChannel(s.name, hi)).Slice()
	if err != nil {
		return "", false, err
	}
	value, ok1 := v[0].(string)
	n, ok2 := v[1].(int64)
	if len(v) != 2 || !ok1 || !ok2 {
		return "", false, fmt.Errorf("%w: presence: %v", ErrUnexpectedReply, v)
	}
	return value, n > 0, nil
}

// runAcquire runs acquireScript once; takeFrom (a lock value) and its holder's channel
// are "" but for a takeover.
func (s *redisStore) runAcquire(ctx context.Context, instance string, ttl time.Duration, takeFrom, takeFromChannel string) (acquireReply, error) {
	own := ""
	if s.presence {
		own = PresenceChannel(s.name, instance)
	}
	// Script.Run falls back from EVALSHA to EVAL only on NOSCRIPT, which Redis answers
	// without running anything: that is not a re-send.
	v, err := acquireScript.Run(ctx, s.c, []string{s.lock, s.token}, instance, ttl.Milliseconds(), own, takeFrom, takeFromChannel).Slice()
	if err != nil {
		return acquireReply{}, err
	}
	return parseAcquireReply(v)
}

// parseAcquireReply reads the acquire script's reply: {1, token, took over}, {0, holder,
// pttl} or {-1, value or "", pttl}. Anything else is ErrUnexpectedReply: a refusal must
// name the holder that refused it, since the script found the lock set (an empty holder
// is a script that answered "held" for a free lock).
func parseAcquireReply(v []any) (acquireReply, error) {
	bad := fmt.Errorf("%w: acquire: %v", ErrUnexpectedReply, v)
	if len(v) != 3 {
		return acquireReply{}, bad
	}
	won, ok1 := v[0].(int64)
	if ok1 && won == 1 {
		ts, ok := v[1].(string)
		if !ok {
			return acquireReply{}, bad
		}
		token, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return acquireReply{}, bad
		}
		took, _ := v[2].(int64)
		return acquireReply{won: true, token: token, tookOver: took == 1}, nil
	}
	holder, ok2 := v[1].(string)
	pttl, ok3 := v[2].(int64)
	if !ok1 || !ok2 || !ok3 || (won != 0 && won != -1) || (won == 0 && holder == "") {
		return acquireReply{}, bad
	}
	r := acquireReply{holder: holder, pttl: -1, absent: won == -1}
	if pttl >= 0 {
		r.pttl = time.Duration(pttl) * time.Millisecond
	}
	return r, nil
}

func (s *redisStore) renew(ctx context.Context, value string, ttl time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, s.c, []string{s.lock}, value, ttl.Milliseconds()).Int64()
	return n == 1, err
}

func (s *redisStore) release(ctx context.Context, value string) (bool, error) {
	n, err := releaseScript.Run(ctx, s.c, []string{s.lock}, value, s.channel).Int64()
	return n == 1, err
}

func (s *redisStore) subscribe(ctx context.Context, instance string) subscription {
	channels := []string{s.channel}
	if instance != "" {
		// On the same connection as the release notices: a crash closes both.
		channels = append(channels, PresenceChannel(s.name, instance))
	}
	ps := s.c.Subscribe(ctx, channels...)
	// Wait (bounded) for the confirmation, so that a standby is subscribed before its
	// first acquire attempt. On failure go-redis keeps reconnecting in the background.
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	_, _ = ps.ReceiveTimeout(rctx, s.timeout)
	cancel()
	sub := &redisSub{ps: ps, c: make(chan struct{}, 1), done: make(chan struct{})}
	msgs := ps.Channel()
	go func() {
		defer close(sub.done)
		// Drain go-redis's channel at once, coalescing into ours: a full go-redis channel
		// would block its reader and log.
		for range msgs {
			select {
			case sub.c <- struct{}{}:
			default:
			}
		}
	}()
	return sub
}

type redisSub struct {
	ps   *redis.PubSub
	c    chan struct{}
	done chan struct{}
	once sync.Once
}

func (s *redisSub) C() <-chan struct{} { return s.c }

func (s *redisSub) Close() {
	s.once.Do(func() { _ = s.ps.Close() })
	<-s.done // Close closes msgs, which ends the goroutine
}

// Info is the state of an election as read from Redis by Leader.
type Info struct {
	// Held reports whether the lock exists. Instance, Token and TTL describe it if so.
	Held     bool
	Instance string
	Token    int64
	// TTL is the lock's remaining time to live as Redis reported it (PTTL), truncated to
	// milliseconds; -1 if the lock has no expiry (never set by this package).
	TTL time.Duration
	// Counter is the token counter: the last token issued (0 if none ever was).
	Counter int64
}

// Leader reads the current lock holder and the token counter of election name
// (DefaultName if empty) in one atomic script. It blocks for one round trip. It returns an
// error wrapping ErrMalformedLock if the lock holds something that is not a lock value.
func Leader(ctx context.Context, c redis.UniversalClient, name string) (Info, error) {
	v, err := infoScript.Run(ctx, c, []string{LockKey(name), TokenKey(name)}).Slice()
	if err != nil {
		return Info{}, fmt.Errorf("election: leader: %w", err)
	}
	if len(v) != 3 {
		return Info{}, fmt.Errorf("%w: leader: %v", ErrUnexpectedReply, v)
	}
	value, ok1 := v[0].(string)
	pttl, ok2 := v[1].(int64)
	counter, ok3 := v[2].(string)
	if !ok1 || !ok2 || !ok3 {
		return Info{}, fmt.Errorf("%w: leader: %v", ErrUnexpectedReply, v)
	}
	var info Info
	if info.Counter, err = strconv.ParseInt(counter, 10, 64); err != nil {
		return Info{}, fmt.Errorf("%w: token counter %q", ErrUnexpectedReply, counter)
	}
	if value == "" {
		return info, nil
	}
	info.Held = true
	info.TTL = time.Duration(pttl) * time.Millisecond
	if pttl < 0 {
		info.TTL = -1
	}
	info.Instance, info.Token, err = ParseLockValue(value)
	return info, err
}
