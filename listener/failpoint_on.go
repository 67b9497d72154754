//go:build failpoints

package listener

import "github.com/fenceline/fenceline/internal/failpoint"

// hit runs the failpoint name (see internal/failpoint, where each is documented). This
// file exists only in a build with the failpoints tag; failpoint_off.go is the rest.
func hit(name string) error { return failpoint.Hit(name) }
