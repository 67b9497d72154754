//go:build chaos

// Package mutants grades the harness on bugs nobody chose: it generates mutants of the
// safety-critical code mechanically, runs each through the package's unit tests and
// through one default chaos run (a second seed if the first survives), and reports each
// as killed by the unit tests, killed by the harness (with the check and the time) or
// surviving: `fenceline mutants`, `make mutants`. It exists in chaos builds only.
//
// The code under mutation, and only it (Scope):
//   - the acquire, renew, release and commit Lua scripts: every relational operator
//     flipped (== and ~=, < and <=, > and >=), every condition of an if, elseif or while
//     dropped (one operand of a top-level and/or removed, or a lone condition made
//     true), every integer constant ±1 (not the KEYS and ARGV indexes, which swap
//     arguments rather than change logic), every redis.call statement dropped. The
//     commit script's mutable part is its fence: the regions between "-- mutants:
//     begin" and "-- mutants: end" (the integer comparison, the check against the stored
//     record, the audit and the record's update); its argument validation is out of
//     scope (a correct node never sends a bad argument, so no history exercises it);
//   - the elector's deadline and step-down logic (election/leadership.go's Lead,
//     startRenew, release, stepDown and Check) and the listener's stale-token handling
//     (listener.Run, the fence's run and parseCommitReply), mutated by gremlins
//     (github.com/go-gremlins/gremlins): its dry run lists every mutant with its operator
//     and position, and this package applies each to a copy of the source, because
//     gremlins itself runs only the unit tests and the second stage needs the mutated
//     binary.
package mutants

import (
	"bytes"
	"fmt"
)

// Mutant is one change to one source file: Old, found at byte Offset of File, replaced
// by New.
type Mutant struct {
	// ID names the mutant in the report: "<short file>:<line>:<operator>[#n]".
	ID string `json:"id"`
	// File is the file's path relative to the module's root.
	File string `json:"file"`
	// Package is the Go package whose unit tests run first ("./election").
	Package string `json:"package"`
	// Operator names the kind of change (a gremlins type, or the Lua generator's).
	Operator string `json:"operator"`
	// Line is the 1-based line of the change in File.
	Line   int    `json:"line"`
	Offset int    `json:"offset"`
	Old    string `json:"old"`
	New    string `json:"new"`
}

// Apply returns src with the mutation applied, or an error if src does not hold Old at
// Offset (the file changed since the mutant was generated).
func (m Mutant) Apply(src []byte) ([]byte, error) {
	end := m.Offset + len(m.Old)
	if m.Offset < 0 || end > len(src) || string(src[m.Offset:end]) != m.Old {
		return nil, fmt.Errorf("mutants: %s: %q not found at offset %d of %s", m.ID, m.Old, m.Offset, m.File)
	}
	var b bytes.Buffer
	b.Grow(len(src) - len(m.Old) + len(m.New))
	b.Write(src[:m.Offset])
	b.WriteString(m.New)
	b.Write(src[end:])
	return b.Bytes(), nil
}

// lineOf is the 1-based line of byte offset off in src.
func lineOf(src []byte, off int) int { return bytes.Count(src[:off], []byte("\n")) + 1 }
