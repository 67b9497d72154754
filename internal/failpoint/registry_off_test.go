//go:build !failpoints

package failpoint

import (
	"errors"
	"testing"
)

// Without the tag nothing can be armed, and the reason says which build has them; a bad
// name or action is still reported as such first.
func TestArmWithoutTag(t *testing.T) {
	if _, err := Arm(RenewBeforeSend, "block"); !errors.Is(err, ErrNotCompiled) {
		t.Errorf("Arm = %v, want ErrNotCompiled", err)
	}
	if _, err := Arm("nope", "block"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Arm(nope) = %v, want ErrUnknown", err)
	}
	if _, err := Arm(RenewBeforeSend, "nap"); !errors.Is(err, ErrBadAction) {
		t.Errorf("Arm(nap) = %v, want ErrBadAction", err)
	}
	if Enabled || Status() != nil {
		t.Error("a build without the tag reports failpoints")
	}
}
