//go:build !failpoints

package failpoint

// Enabled is false in a build without the failpoints tag: no hook exists, Hit does not.
const Enabled = false

// Arm checks name and spec, then returns ErrNotCompiled: this build has no hooks.
func Arm(name, spec string) (Action, error) {
	if _, err := validate(name, spec); err != nil {
		return Action{}, err
	}
	return Action{}, ErrNotCompiled
}

// Disarm checks name; nothing is ever armed in this build.
func Disarm(name string) error { return Check(name) }

// DisarmAll does nothing in this build.
func DisarmAll() {}

// Status returns nil in this build.
func Status() []State { return nil }
