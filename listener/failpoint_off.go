//go:build !failpoints

package listener

// hit is inlined away: a default build keeps no call, no branch and no name of a
// failpoint (TestDefaultBuildHasNoFailpoints in cmd/fenceline reads the binary).
func hit(string) error { return nil }
