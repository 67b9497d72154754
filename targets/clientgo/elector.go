package clientgo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/leaderelection"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/targets"
)

// Config configures an Elector. Zero fields take the documented default.
type Config struct {
	// Target is targets.ClientGo, targets.ClientGoFenced or targets.ClientGoTransitions.
	// Required.
	Target string
	// InstanceID names this elector in logs and in the history. Required.
	InstanceID string
	// Name is the election name, the hash tag of the record key and of the token counter.
	// Default election.DefaultName.
	Name string
	// LeaseDuration is client-go's LeaseDuration: how long a candidate waits without
	// seeing the record change before it takes over. A whole number of seconds (client-go
	// writes it to the record as LeaseDurationSeconds, an integer). Default
	// election.DefaultLeaseTTL (2s).
	LeaseDuration time.Duration
	// RenewDeadline is client-go's RenewDeadline: how long the leader retries a renewal
	// before it gives up. Default LeaseDuration×10/15 (client-go's defaults are 15 s, 10 s
	// and 2 s).
	RenewDeadline time.Duration
	// RetryPeriod is client-go's RetryPeriod: the time between tries. Default
	// LeaseDuration×2/15.
	RetryPeriod time.Duration
	// Logger receives client-go's own log lines (through logr) and the lock's events.
	// Default: discard.
	Logger *slog.Logger
	// Recorder receives every acquire, renew, release and step-down (see
	// election.Recorder). Default: none.
	Recorder election.Recorder
	// OnRead, if set, is called after each read of the record with its error: nil when
	// Redis answered (also when there is no record). A standby only reads, so this is
	// how its owner learns that Redis answers it. Default: none.
	OnRead func(err error)
}

// withDefaults returns c with its defaults applied.
func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = election.DefaultName
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = election.DefaultLeaseTTL
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = c.LeaseDuration * 10 / 15
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = c.LeaseDuration * 2 / 15
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Recorder == nil {
		c.Recorder = nopRecorder{}
	}
	return c
}

// requestTimeout bounds each request of the lock as client-go bounds a request to the
// API server (resourcelock.NewFromKubeconfig).
func (c Config) requestTimeout() time.Duration { return max(time.Second, c.RenewDeadline/2) }

// Elector runs client-go's LeaderElector as a leader election, campaign after campaign.
// Create it with New. Status and Check are safe for concurrent use.
type Elector struct {
	cfg         Config // defaults applied
	client      redis.UniversalClient
	transitions bool // the fence is the record's LeaderTransitions, not the minted token

	mu  sync.Mutex
	cur *campaign // the campaign under way; nil between campaigns
}

// New returns an Elector on client, which must not retry commands (MaxRetries -1). It
// sends nothing. It returns an error if cfg's target is not a client-go target, if
// LeaseDuration is not a whole number of seconds, or if client-go's LeaderElector refuses
// the three durations (LeaseDuration > RenewDeadline > 1.2×RetryPeriod).
func New(client redis.UniversalClient, cfg Config) (*Elector, error) {
	if client == nil || cfg.InstanceID == "" {
		return nil, errors.New("clientgo: need a redis client and an InstanceID")
	}
	switch cfg.Target {
	case targets.ClientGo, targets.ClientGoFenced, targets.ClientGoTransitions:
	default:
		return nil, fmt.Errorf("clientgo: %q is not a client-go target", cfg.Target)
	}
	if strings.ContainsAny(cfg.Name, "{}") {
		return nil, fmt.Errorf("clientgo: election name %q must not contain '{' or '}'", cfg.Name)
	}
	cfg = cfg.withDefaults()
	if cfg.LeaseDuration < time.Second || cfg.LeaseDuration%time.Second != 0 {
		return nil, fmt.Errorf("clientgo: lease duration %v: client-go records it in whole seconds, so it must be 1s, 2s, ...", cfg.LeaseDuration)
	}
	e := &Elector{cfg: cfg, client: client, transitions: cfg.Target == targets.ClientGoTransitions}
	// client-go's own checks of the durations, on a throwaway elector.
	if _, err := e.newCampaign(); err != nil {
		return nil, err
	}
	return e, nil
}

// Status returns the elector's role and token, and the holder last observed in the
// record with its token (its fence: the minted token, or LeaderTransitions+1).
func (e *Elector) Status() election.Status {
	e.mu.Lock()
	c := e.cur
	e.mu.Unlock()
	if c == nil {
		return election.Status{Role: election.RoleFollower}
	}
	return c.status()
}

// Check returns an error wrapping election.ErrLeaseOverdue if the elector leads and
// client-go's LeaderElector.Check says its lease expired more than maxTolerable ago.
func (e *Elector) Check(maxTolerable time.Duration) error {
	e.mu.Lock()
	c := e.cur
	e.mu.Unlock()
	if c == nil || c.status().Role != election.RoleLeader {
		return nil
	}
	if err := c.le.Check(maxTolerable); err != nil {
		return fmt.Errorf("%w: %v", election.ErrLeaseOverdue, err)
	}
	return nil
}

// Run campaigns until ctx is done, then returns nil. It blocks. Each campaign is one
// LeaderElector.Run with a fresh identity (the instance id and a random suffix), as a
// process that runs client-go's election once and exits when it loses, as client-go's
// users do, restarted with a new id. When a campaign wins, lead(termCtx, term) runs on
// OnStartedLeading's goroutine; termCtx is the context client-go gives
// OnStartedLeading, cancelled when ctx is done, or when client-go gives up renewing and
// has tried to release the record (ReleaseOnCancel releases before it cancels the
// context, so a standby may lead before termCtx is done). A campaign ends when LeaderElector.Run returns,
// and Run waits for lead to return before the next one. If lead returns on its own, the
// campaign's context is cancelled (client-go releases the record) and the next campaign
// starts RetryPeriod later.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context, t election.Term)) error {
	ctx = klog.NewContext(ctx, logr.FromSlogHandler(e.cfg.Logger.Handler()))
	for ctx.Err() == nil {
		c, err := e.newCampaign()
		if err != nil {
			return err
		}
		e.mu.Lock()
		e.cur = c
		e.mu.Unlock()
		if c.run(ctx, lead) {
			sleep(ctx, e.cfg.RetryPeriod)
		}
	}
	return nil
}

// campaign is one LeaderElector, with its lock, under one identity.
type campaign struct {
	e    *Elector
	lock *Lock
	le   *leaderelection.LeaderElector
	lead func(context.Context, election.Term)

	parent   context.Context
	cancel   context.CancelCauseFunc
	leadDone chan struct{} // closed when OnStartedLeading returns

	mu       sync.Mutex
	acquired bool          // an acquiring write succeeded: OnStartedLeading is called
	leading  bool          // a term runs (from the acquiring write to its step-down)
	term     election.Term // the term, once acquired
	rejected bool          // the last renewal was refused
	returned bool          // lead returned on its own
}

func (e *Elector) newCampaign() (*campaign, error) {
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix) // never fails (crypto/rand)
	c := &campaign{e: e, leadDone: make(chan struct{})}
	lock, err := NewLock(e.client, e.cfg.Name, e.cfg.InstanceID+"_"+hex.EncodeToString(suffix), e.cfg.requestTimeout(),
		func(msg string) { e.cfg.Logger.Debug("client-go-event", slog.String("event", msg)) })
	if err != nil {
		return nil, err
	}
	c.lock = lock
	c.le, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            recordingLock{c},
		LeaseDuration:   e.cfg.LeaseDuration,
		RenewDeadline:   e.cfg.RenewDeadline,
		RetryPeriod:     e.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            e.cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: c.onStartedLeading,
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("clientgo: %w", err)
	}
	return c, nil
}

// run runs the LeaderElector until it returns, and waits for lead. It reports whether
// lead returned on its own.
func (c *campaign) run(ctx context.Context, lead func(context.Context, election.Term)) bool {
	c.lead, c.parent = lead, ctx
	cctx, cancel := context.WithCancelCause(ctx)
	c.cancel = cancel
	defer cancel(nil)
	c.le.Run(cctx)
	c.mu.Lock()
	acquired := c.acquired
	c.mu.Unlock()
	if acquired {
		<-c.leadDone
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.returned
}

// onStartedLeading leads the term that the acquiring write started, until client-go
// cancels ctx or lead returns, records the step-down and waits for lead.
func (c *campaign) onStartedLeading(ctx context.Context) {
	defer close(c.leadDone)
	c.mu.Lock()
	term := c.term
	c.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.lead(ctx, term)
	}()
	returned := false
	select {
	case <-ctx.Done():
	case <-done:
		returned = ctx.Err() == nil
	}
	c.mu.Lock()
	c.leading, c.returned = false, returned
	reason := election.ReasonLeaseExpired // client-go gave up renewing after RenewDeadline
	switch {
	case returned:
		reason = election.ReasonLeadReturned
	case c.parent.Err() != nil:
		reason = election.ReasonShutdown
	case c.rejected:
		reason = election.ReasonRenewRejected
	}
	c.mu.Unlock()
	level := slog.LevelWarn
	if reason == election.ReasonShutdown || reason == election.ReasonLeadReturned {
		level = slog.LevelInfo
	}
	c.e.cfg.Logger.Log(context.Background(), level, "lost-leadership", slog.Int64("token", term.Token), slog.String("reason", string(reason)))
	c.e.cfg.Recorder.StepDown(term.Token, reason)
	if returned {
		c.cancel(election.ErrLeadReturned) // client-go releases the record and returns
	}
	<-done
}

func (c *campaign) status() election.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leading {
		return election.Status{Role: election.RoleLeader, Token: c.term.Token, Leader: c.term.Instance, LeaderToken: c.term.Token}
	}
	holder, tok, transitions := c.lock.Observed()
	if holder == "" {
		return election.Status{Role: election.RoleFollower}
	}
	return election.Status{Role: election.RoleFollower, Leader: instanceOf(holder), LeaderToken: c.fence(tok, transitions)}
}

// fence is a term's fencing token: the minted token, or LeaderTransitions+1 (client-go
// creates the record with 0; the store wants tokens from 1).
func (c *campaign) fence(token int64, transitions int) int64 {
	if c.e.transitions {
		return int64(transitions) + 1
	}
	return token
}

// instanceOf is the instance id of a campaign's identity.
func instanceOf(identity string) string {
	if i := strings.LastIndexByte(identity, '_'); i > 0 {
		return identity[:i]
	}
	return identity
}

// recordingLock is the campaign's Lock as client-go sees it: each write is recorded as
// the request it is in the election (an acquire while no term runs, a renewal in a term,
// a release when it clears the holder).
type recordingLock struct{ c *campaign }

func (r recordingLock) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	rec, raw, err := r.c.lock.Get(ctx)
	if on := r.c.e.cfg.OnRead; on != nil {
		if apierrors.IsNotFound(err) {
			on(nil)
		} else {
			on(err)
		}
	}
	return rec, raw, err
}
func (r recordingLock) Create(ctx context.Context, ler rl.LeaderElectionRecord) error {
	return r.write(ctx, ler, r.c.lock.Create)
}
func (r recordingLock) Update(ctx context.Context, ler rl.LeaderElectionRecord) error {
	return r.write(ctx, ler, r.c.lock.Update)
}
func (r recordingLock) RecordEvent(msg string) { r.c.lock.RecordEvent(msg) }
func (r recordingLock) Identity() string       { return r.c.lock.Identity() }
func (r recordingLock) Describe() string       { return r.c.lock.Describe() }

func (r recordingLock) write(ctx context.Context, ler rl.LeaderElectionRecord, write func(context.Context, rl.LeaderElectionRecord) error) error {
	c := r.c
	rec := c.e.cfg.Recorder
	c.mu.Lock()
	acquired, token := c.acquired, c.term.Token
	c.mu.Unlock()
	op := election.OpRenew
	switch {
	case ler.HolderIdentity == "":
		op = election.OpRelease
	case !acquired:
		op = election.OpAcquire
		token = 0
	}
	start := time.Now()
	complete := rec.Invoke(op, token)
	err := write(ctx, ler)
	refused := apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
	switch {
	case err == nil && op == election.OpAcquire:
		_, tok, _ := c.lock.Observed()
		term := election.Term{Token: c.fence(tok, ler.LeaderTransitions), Instance: c.e.cfg.InstanceID, Name: c.e.cfg.Name, Start: start}
		c.mu.Lock()
		c.acquired, c.leading, c.term = true, true, term
		c.mu.Unlock()
		c.e.cfg.Logger.Info("became-leader", slog.Int64("token", term.Token), slog.String("identity", ler.HolderIdentity))
		complete(election.Result{Outcome: election.OK, Token: term.Token})
	case err == nil:
		if op == election.OpRenew {
			c.mu.Lock()
			c.rejected = false
			c.mu.Unlock()
		}
		complete(election.Result{Outcome: election.OK, Token: token})
		if op == election.OpRelease {
			c.e.cfg.Logger.Info("released", slog.Int64("token", token))
		}
	case refused && op == election.OpAcquire:
		complete(election.Result{Outcome: election.Fail, Err: election.ErrLeaseHeld})
	case refused:
		if op == election.OpRenew {
			c.mu.Lock()
			c.rejected = true
			c.mu.Unlock()
		}
		complete(election.Result{Outcome: election.Fail, Token: token, Err: election.ErrNotHeld})
	default:
		complete(election.Result{Outcome: election.Unknown, Token: token, Err: err})
		if op == election.OpRenew {
			c.e.cfg.Logger.Warn("renew-failed", slog.Int64("token", token), slog.Any("error", err))
		}
	}
	return err
}

type nopRecorder struct{}

func (nopRecorder) Invoke(election.Op, int64) func(election.Result) { return func(election.Result) {} }
func (nopRecorder) StepDown(int64, election.Reason)                 {}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
