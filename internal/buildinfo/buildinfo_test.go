package buildinfo

import (
	"strings"
	"testing"
)

// A test binary has no VCS stamp: what it does not know is "unknown", never empty, and
// the revision make passes (-ldflags -X) is used.
func TestReadNeverEmpty(t *testing.T) {
	in := Read()
	for name, v := range map[string]string{"version": in.Version, "revision": in.Revision, "modified": in.Modified, "go": in.Go} {
		if v == "" {
			t.Errorf("%s is empty", name)
		}
	}
	old, oldMod := Revision, Modified
	t.Cleanup(func() { Revision, Modified = old, oldMod })
	Revision, Modified = "abc123", "true"
	if in := Read(); in.Revision != "abc123" || in.Modified != "true" || !strings.HasSuffix(in.String(), "abc123 (modified)") {
		t.Errorf("with the -X revision: %+v, %q", in, in.String())
	}
	if got := (Info{Version: "v1.2.3", Revision: "abc", Modified: "false", Go: "go1"}).Text(); got != "fenceline v1.2.3\nrevision abc\nmodified false\ngo go1\n" {
		t.Errorf("Text() = %q", got)
	}
}

// A report's heading names the commit short, never the module's "(devel)".
func TestCommit(t *testing.T) {
	for _, c := range []struct {
		in   Info
		want string
	}{
		{Info{Version: "(devel)", Revision: "5d76e84661e1b81a76d130a4d27bfed6131914f0", Modified: "false"}, "commit 5d76e84"},
		{Info{Revision: "5d76e84661e1", Modified: "true"}, "commit 5d76e84 (modified)"},
		{Info{Revision: "abc", Modified: Unknown}, "commit abc"},
		{Info{Revision: Unknown}, "an unknown commit"},
	} {
		if got := c.in.Commit(); got != c.want {
			t.Errorf("%+v.Commit() = %q, want %q", c.in, got, c.want)
		}
	}
}
