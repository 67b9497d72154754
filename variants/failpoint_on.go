//go:build chaos && failpoints

package variants

import "github.com/fenceline/fenceline/internal/failpoint"

// hit runs the failpoint name (see internal/failpoint).
func hit(name string) error { return failpoint.Hit(name) }
