package clientgo

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/fenceline/fenceline/election"
)

// RecordKey is the key of the election record: a hash, next to the election's other keys
// (same hash tag), with fields rec (the LeaderElectionRecord as JSON), ver (its version,
// the stand-in for the Lease's resourceVersion), holder and acquired (the record's
// HolderIdentity and AcquireTime, for the script to compare) and token (the fencing token
// of the record's current or last term).
func RecordKey(name string) string { return election.KeyPrefix(name) + "client-go" }

// leases is the resource a real LeaseLock works on, for the API errors client-go tests
// with errors.IsNotFound and errors.IsConflict.
var leases = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// writeScript is Create (ARGV[1] empty) and Update (ARGV[1] the version last observed):
// a compare-and-swap of the record on its version, as the API server's resourceVersion
// check is, that mints a token from the counter when a new term starts. It returns
// {0, version, token} when written, {1} if Create found a record, {2} if Update found
// none, {3} if the version moved. The token travels as a string: tokens may exceed
// 2^53, where a Lua number no longer holds every integer.
//
//go:embed write.lua
var writeLua string

var writeScript = redis.NewScript(writeLua)

// Script replies.
const (
	written  = 0
	exists   = 1
	notFound = 2
	conflict = 3
)

// Lock is client-go's resourcelock.Interface over Redis: a stand-in for the API server's
// Lease object. Create it with NewLock. LeaderElector calls it from one goroutine at a
// time; Token and Observed are safe for concurrent use.
type Lock struct {
	client   redis.UniversalClient
	name     string
	identity string
	timeout  time.Duration
	onEvent  func(string)

	mu      sync.Mutex
	version int64  // the record's version last observed (Get, Create, Update); 0 none
	token   int64  // the token beside the record last observed
	holder  string // the HolderIdentity last observed
	trans   int    // the LeaderTransitions last observed
}

// NewLock returns the lock of election name (election.DefaultName if empty) for the
// candidate identity. Each request is bounded by timeout, as client-go bounds a request
// to the API server (NewFromKubeconfig: max(1s, RenewDeadline/2)). onEvent, if not nil,
// receives RecordEvent's messages. It sends nothing.
func NewLock(client redis.UniversalClient, name, identity string, timeout time.Duration, onEvent func(string)) (*Lock, error) {
	if client == nil || identity == "" || timeout <= 0 {
		return nil, errors.New("clientgo: a lock needs a redis client, an identity and a request timeout > 0")
	}
	if name == "" {
		name = election.DefaultName
	}
	return &Lock{client: client, name: name, identity: identity, timeout: timeout, onEvent: onEvent}, nil
}

// Get returns the record and its JSON (json.Marshal of the record, as LeaseLock's Get
// returns it: client-go compares these bytes to see the record change). It returns an
// API NotFound error if there is no record.
func (l *Lock) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	v, err := l.client.HMGet(ctx, RecordKey(l.name), "rec", "ver", "token").Result()
	if err != nil {
		return nil, nil, err
	}
	if v[0] == nil {
		return nil, nil, apierrors.NewNotFound(leases, l.name)
	}
	rec, ver, tok, err := parseRecord(v)
	if err != nil {
		return nil, nil, err
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, nil, err
	}
	l.mu.Lock()
	l.version, l.token, l.holder, l.trans = ver, tok, rec.HolderIdentity, rec.LeaderTransitions
	l.mu.Unlock()
	return &rec, raw, nil
}

// parseRecord reads HMGET's rec, ver and token.
func parseRecord(v []any) (rl.LeaderElectionRecord, int64, int64, error) {
	var rec rl.LeaderElectionRecord
	s, _ := v[0].(string)
	if err := json.Unmarshal([]byte(s), &rec); err != nil {
		return rec, 0, 0, fmt.Errorf("clientgo: malformed record %q: %w", s, err)
	}
	vs, _ := v[1].(string)
	ver, err := strconv.ParseInt(vs, 10, 64)
	if err != nil || ver < 1 {
		return rec, 0, 0, fmt.Errorf("clientgo: malformed record version %q", vs)
	}
	ts, _ := v[2].(string)
	tok, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || tok < 0 {
		return rec, 0, 0, fmt.Errorf("clientgo: malformed record token %q", ts)
	}
	return rec, ver, tok, nil
}

// Create writes ler if there is no record yet, and returns an API AlreadyExists error if
// there is one.
func (l *Lock) Create(ctx context.Context, ler rl.LeaderElectionRecord) error {
	return l.write(ctx, "", ler)
}

// Update replaces the record with ler if its version is still the one last observed
// (by Get, Create or Update), and returns an API Conflict error if it moved, as the API
// server refuses a stale resourceVersion. Like LeaseLock's, it needs a Get or Create
// first.
func (l *Lock) Update(ctx context.Context, ler rl.LeaderElectionRecord) error {
	l.mu.Lock()
	ver := l.version
	l.mu.Unlock()
	if ver == 0 {
		return errors.New("clientgo: record not observed yet, call Get or Create first")
	}
	return l.write(ctx, strconv.FormatInt(ver, 10), ler)
}

func (l *Lock) write(ctx context.Context, ver string, ler rl.LeaderElectionRecord) error {
	raw, err := json.Marshal(ler)
	if err != nil {
		return err
	}
	acquired, err := ler.AcquireTime.MarshalJSON()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	r, err := writeScript.Run(ctx, l.client, []string{RecordKey(l.name), election.TokenKey(l.name)},
		ver, raw, ler.HolderIdentity, acquired).Slice()
	if err != nil {
		return err
	}
	status, _ := r[0].(int64)
	switch {
	case status == exists:
		return apierrors.NewAlreadyExists(leases, l.name)
	case status == notFound:
		return apierrors.NewNotFound(leases, l.name)
	case status == conflict:
		return apierrors.NewConflict(leases, l.name, errors.New("the record's version moved"))
	case status != written || len(r) != 3:
		return fmt.Errorf("clientgo: unexpected reply %v", r)
	}
	nver, _ := r[1].(int64)
	ts, _ := r[2].(string)
	tok, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("clientgo: unexpected token %q", ts)
	}
	l.mu.Lock()
	l.version, l.token, l.holder, l.trans = nver, tok, ler.HolderIdentity, ler.LeaderTransitions
	l.mu.Unlock()
	return nil
}

// Observed returns the holder, the token and the LeaderTransitions of the record last
// observed (by Get or a write).
func (l *Lock) Observed() (holder string, token int64, transitions int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holder, l.token, l.trans
}

// RecordEvent passes msg to the lock's onEvent.
func (l *Lock) RecordEvent(msg string) {
	if l.onEvent != nil {
		l.onEvent(msg)
	}
}

// Identity returns the candidate's identity.
func (l *Lock) Identity() string { return l.identity }

// Describe names the record, as LeaseLock's namespace/name does.
func (l *Lock) Describe() string { return "redis/" + RecordKey(l.name) }

var _ rl.Interface = (*Lock)(nil)
