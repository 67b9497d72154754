// Package buildinfo says which source a fenceline binary was built from: the module
// version and the VCS revision that `fenceline version` prints and run.json records.
//
// The go command stamps the revision (runtime/debug.ReadBuildInfo) when it builds in a
// git checkout with -buildvcs=auto or true. It does not in a git worktree (its .git is a
// file), with GOFLAGS=-buildvcs=false, or in a test binary; `make build` then passes the
// revision itself (-ldflags -X, see Revision and Modified). What neither gives is
// "unknown", never an empty string.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Unknown is what Info holds for what the binary does not know.
const Unknown = "unknown"

// Revision and Modified are set by `make build` (-ldflags -X) from git, for builds the go
// command does not stamp. The go command's own stamp wins when there is one.
var (
	Revision string // the commit hash
	Modified string // "true" when the work tree had changes, "false" when not
)

// Info is what a binary knows of its source.
type Info struct {
	Version  string // the module version: a tag, a pseudo-version or "(devel)"
	Revision string // the VCS revision (commit hash)
	Modified string // "true" or "false": the work tree had uncommitted changes
	Go       string // the Go toolchain
}

// Read returns the binary's Info; a field it cannot know is Unknown.
func Read() Info {
	in := Info{Version: Unknown, Revision: Revision, Modified: Modified, Go: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.modified":
				in.Modified = s.Value
			}
		}
	}
	if in.Revision == "" {
		in.Revision = Unknown
	}
	if in.Modified == "" {
		in.Modified = Unknown
	}
	return in
}

// String is the one line run.json and the reports show: "VERSION REVISION", with
// "(modified)" after a revision built from a changed work tree.
func (in Info) String() string {
	s := in.Version + " " + in.Revision
	if in.Modified == "true" {
		s += " (modified)"
	}
	return s
}

// Commit is how a report's heading names the source: "commit 5d76e84", with
// "(modified)" after it for a changed work tree, or "an unknown commit".
func (in Info) Commit() string {
	if in.Revision == Unknown || in.Revision == "" {
		return "an unknown commit"
	}
	s := "commit " + in.Revision[:min(len(in.Revision), 7)]
	if in.Modified == "true" {
		s += " (modified)"
	}
	return s
}

// Text is what `fenceline version` prints: one "name value" line each.
func (in Info) Text() string {
	return fmt.Sprintf("fenceline %s\nrevision %s\nmodified %s\ngo %s\n", in.Version, in.Revision, in.Modified, in.Go)
}
