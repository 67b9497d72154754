package checker_test

import (
	"context"
	"fmt"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

// A store without a fence accepted a commit from a leader that had been paused past
// its lease: the linearizability and no-stale-write checks fail. The first sign came
// earlier: that leader's first write after the pause was refused for its cursor, not its
// token, so it reloaded and wrote again.
func ExampleCheck() {
	run, err := history.LoadRun("testdata/stale-write")
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := checker.Check(context.Background(), run, checker.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("verdict:", res.Verdict)
	for _, c := range res.Checks {
		fmt.Printf("%-19s %s\n", c.Name, c.Verdict)
	}
	for _, o := range res.Check(checker.CheckStaleWrite).Offending {
		fmt.Println(o)
	}
	// Output:
	// verdict: invalid
	// linearizability     invalid
	// no-stale-write      invalid
	// unique-tokens       valid
	// exactly-once        valid
	// cursor-monotonic    valid
	// progress            valid
	// audit-consistency   valid
	// leadership-overlap  valid
	// lease-exclusion     valid
	// lease-grant         valid
	// step-down           valid
	// takeover-window     not-applicable
	// unexplained-leader-change valid
	// audit #18: n1 op n1-18 with token 1 was rejected as cursor-conflict, not stale-token, after audit #17 (op n3-26) accepted token 2
	// audit #19: n1 op n1-28 accepted with token 1 after audit #17 (op n3-26) accepted token 2
	// n1 commit n1-28 token=1 45→47: accepted [t+2.014702s, t+2.014893s], although n3 commit n3-21 token=2 30→34: accepted [t+2.011486s, t+2.011926s] was acknowledged before it was invoked
}
