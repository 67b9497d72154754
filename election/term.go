package election

import "time"

// Term is one leadership term of one instance.
type Term struct {
	// Token is the term's fencing token: strictly greater than every token issued before
	// it by the election's counter. Pass it with every write to the fenced store.
	Token int64
	// Instance is the InstanceID of the leader.
	Instance string
	// Name is the election name.
	Name string
	// Start is the Clock reading taken just before the acquire request was sent; the
	// term's first local lease deadline is Start + LeaseTTL - DriftMargin.
	Start time.Time
}

// Role is what an Elector currently is.
type Role string

// Roles.
const (
	RoleFollower Role = "follower"
	RoleLeader   Role = "leader"
)

// Status is a snapshot of an Elector's view of the election.
type Status struct {
	Role Role
	// Token is this instance's term token while Role is RoleLeader, else 0.
	Token int64
	// Leader and LeaderToken are the lock holder this elector last observed (itself while
	// it leads); empty and 0 until it has observed one.
	Leader      string
	LeaderToken int64
}
