package checker_test

import (
	"context"
	"fmt"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

// A store without a fence accepted a commit from a leader that had been paused past
// its lease: the linearizability and no-stale-write checks fail.
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
	fmt.Println(res.Check(checker.CheckStaleWrite).Offending[0])
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
	// audit #19: n1 op n1-28 accepted with token 1 after audit #17 (op n3-26) accepted token 2
}
