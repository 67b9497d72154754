package reports

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/checker"
)

// Every invalid or unknown run's report.md and index.html end with the commands that
// replay and shrink it, naming its directory as the renderer was given it.
func TestReportsEndWithTheWayBack(t *testing.T) {
	for _, tc := range []struct {
		name, stored, dir string
		unknown, want     bool
	}{
		{"invalid", "fail", filepath.Join("testdata", "runs", "fail"), false, true},
		{"unknown", "pass", filepath.Join("testdata", "runs", "pass"), true, true},
		{"valid", "pass", filepath.Join("testdata", "runs", "pass"), false, false},
		{"a directory with a space", "fail", "runs/a b", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, res := loadRunAt(t, filepath.Join("testdata", "runs", tc.stored))
			run.Dir = tc.dir
			if tc.unknown {
				res.Checks[0].Verdict, res.Verdict = checker.Unknown, checker.Unknown
			}
			md, term := string(render(t, Markdown, run, res)), string(render(t, Summary, run, res))
			if got := strings.HasSuffix(term, "  fenceline-chaos chaos --replay "+shellQuote(tc.dir)+"\n  fenceline-chaos shrink "+shellQuote(tc.dir)+"\n"); got != tc.want {
				t.Errorf("the console summary ends with the way back: %v, want %v", got, tc.want)
			}
			dir := shellQuote(tc.dir)
			tail := "```sh\nfenceline-chaos chaos --replay " + dir + "\nfenceline-chaos shrink " + dir + "\n```\n"
			if got := strings.HasSuffix(md, tail); got != tc.want {
				t.Errorf("report.md ends with the way back: %v, want %v; it ends:\n%s", got, tc.want, md[max(0, len(md)-300):])
			}
			html := string(render(t, HTML, run, res))
			i, j := strings.Index(html, `id="way-back"`), strings.LastIndex(html, "<section")
			if got := i >= 0; got != tc.want {
				t.Fatalf("index.html has the way back: %v, want %v", got, tc.want)
			}
			if !tc.want {
				return
			}
			if j > i {
				t.Errorf("index.html has a section after the way back")
			}
			for _, cmd := range []string{"fenceline-chaos chaos --replay ", "fenceline-chaos shrink "} {
				if !strings.Contains(html[i:], cmd+htmlEscape(dir)+"\n") {
					t.Errorf("index.html's way back lacks %q", cmd+dir)
				}
			}
		})
	}
	if got := shellQuote("runs/it's here"); got != `'runs/it'\''s here'` {
		t.Errorf("shellQuote = %s", got)
	}
}

// htmlEscape is html/template's escaping of the text the way back holds.
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", `"`, "&#34;").Replace(s)
}
