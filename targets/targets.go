package targets

import (
	"errors"

	"github.com/fenceline/fenceline/internal/namelist"
)

// Names of the targets.
const (
	Reference       = "reference"
	Redsync         = "redsync"
	RedsyncFenced   = "redsync-fenced"
	Redislock       = "redislock"
	RedislockFenced = "redislock-fenced"
	Etcd            = "etcd"
	EtcdFenced      = "etcd-fenced"
	// The client-go targets run client-go's LeaderElector on a stand-in for the API
	// server's Lease (package targets/clientgo), in a chaos build only.
	ClientGo            = "client-go"
	ClientGoFenced      = "client-go-fenced"
	ClientGoTransitions = "client-go-transitions"
)

// ClientGoLibrary is the Library of the client-go targets.
const ClientGoLibrary = "k8s.io/client-go/tools/leaderelection"

// Target describes one design under test.
type Target struct {
	Name string
	// Library is the lock library ("" for the reference, which uses package election).
	Library string
	// Fenced is true when the store checks a fencing token on every cursor write.
	Fenced bool
	// Fence says what the fencing token is, in a few words, for the reports ("none" when
	// the target is unfenced).
	Fence string
	// Description says what the target does, for -h and the reports.
	Description string
	// Etcd is true when the target elects through etcd: the harness starts an etcd
	// cluster beside Redis (which still holds the cursor) and gives the nodes its
	// endpoints (--etcd).
	Etcd bool
	// ChaosOnly is true for a target that a chaos build runs, with --chaos, and a
	// default build does not contain: one whose lock backend is a stand-in.
	ChaosOnly bool
	// NoExclusion is true for an election that does not promise mutual exclusion of its
	// lease (client-go's package doc: it "does not guarantee that only one client is
	// acting as a leader"): a lease-exclusion violation is a finding about it, which
	// `make targets` tabulates, not a failure of the design; its fence must still hold.
	NoExclusion bool
}

var all = []Target{
	{Name: Reference, Fenced: true, Fence: "token (lease script)",
		Description: "fenceline's election (lease, release notice) and its fenced store"},
	{Name: Redsync, Library: "github.com/go-redsync/redsync/v4", Fence: "none",
		Description: "redsync mutex (Lock, Extend, Unlock; standbys retry Lock); plain cursor write, no fence"},
	{Name: RedsyncFenced, Library: "github.com/go-redsync/redsync/v4", Fenced: true, Fence: "token (INCR after Lock)",
		Description: "redsync mutex; a token from INCR after Lock; fenced store"},
	{Name: Redislock, Library: "github.com/bsm/redislock", Fence: "none",
		Description: "redislock (Obtain with linear backoff, Refresh, Release); plain cursor write, no fence"},
	{Name: RedislockFenced, Library: "github.com/bsm/redislock", Fenced: true, Fence: "token (INCR after Obtain)",
		Description: "redislock; a token from INCR after Obtain; fenced store"},
	{Name: Etcd, Library: "go.etcd.io/etcd/client/v3/concurrency", Etcd: true, Fence: "none",
		Description: "etcd election (Campaign, session keep-alive, Resign); plain cursor write, no fence"},
	{Name: EtcdFenced, Library: "go.etcd.io/etcd/client/v3/concurrency", Fenced: true, Etcd: true, Fence: "create revision of the leader key",
		Description: "etcd election; the leader key's create revision as the token; fenced store"},
	{Name: ClientGo, Library: ClientGoLibrary, Fence: "none", ChaosOnly: true, NoExclusion: true,
		Description: "client-go's LeaderElector on a Redis stand-in for the Lease (chaos build only); plain cursor write, no fence"},
	{Name: ClientGoFenced, Library: ClientGoLibrary, Fenced: true, Fence: "token minted by the record's compare-and-swap", ChaosOnly: true, NoExclusion: true,
		Description: "client-go's LeaderElector; a token minted by the record's compare-and-swap when a term starts; fenced store (chaos build only)"},
	{Name: ClientGoTransitions, Library: ClientGoLibrary, Fenced: true, Fence: "the record's LeaderTransitions", ChaosOnly: true, NoExclusion: true,
		Description: "client-go's LeaderElector; the record's LeaderTransitions (+1) as the token; fenced store (chaos build only)"},
}

// All returns every target, the reference first.
func All() []Target { return append([]Target(nil), all...) }

// ErrUnknown is returned for a name that is not a target.
var ErrUnknown = errors.New("targets: unknown target")

// ByName returns the target called name.
func ByName(name string) (Target, error) {
	return namelist.Find(all, func(t Target) string { return t.Name }, name, ErrUnknown)
}

// Names lists the targets' names, the reference first.
func Names() []string {
	out := make([]string, len(all))
	for i, t := range all {
		out[i] = t.Name
	}
	return out
}

// Describe is a one-line description of every target, for -h.
func Describe() string {
	var s string
	for _, t := range all {
		s += "\n    " + t.Name + ": " + t.Description
	}
	return s
}
