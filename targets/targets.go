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
	// Description says what the target does, for -h and the reports.
	Description string
	// ChaosOnly is true for a target that a chaos build runs, with --chaos, and a
	// default build does not contain: one whose lock backend is a stand-in.
	ChaosOnly bool
}

var all = []Target{
	{Reference, "", true, "fenceline's election (lease, release notice) and its fenced store", false},
	{Redsync, "github.com/go-redsync/redsync/v4", false, "redsync mutex (Lock, Extend, Unlock; standbys retry Lock); plain cursor write, no fence", false},
	{RedsyncFenced, "github.com/go-redsync/redsync/v4", true, "redsync mutex; a token from INCR after Lock; fenced store", false},
	{Redislock, "github.com/bsm/redislock", false, "redislock (Obtain with linear backoff, Refresh, Release); plain cursor write, no fence", false},
	{RedislockFenced, "github.com/bsm/redislock", true, "redislock; a token from INCR after Obtain; fenced store", false},
	{ClientGo, ClientGoLibrary, false, "client-go's LeaderElector on a Redis stand-in for the Lease (chaos build only); plain cursor write, no fence", true},
	{ClientGoFenced, ClientGoLibrary, true, "client-go's LeaderElector; a token minted by the record's compare-and-swap when a term starts; fenced store (chaos build only)", true},
	{ClientGoTransitions, ClientGoLibrary, true, "client-go's LeaderElector; the record's LeaderTransitions (+1) as the token; fenced store (chaos build only)", true},
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
