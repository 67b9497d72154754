package reports

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

// Names of the files Write writes into a run directory.
const (
	ResultsFile  = "results.json"
	MarkdownFile = "report.md"
	HTMLFile     = "index.html"
	JUnitFile    = "junit.xml"
)

// Write renders the four reports of a run (results.json, report.md, index.html and
// junit.xml) into run.Dir, replacing any earlier ones, with the default Options: when a
// list of results.json is cut, the complete lists go to results-full.json.gz. Each file
// is written to a temporary name and renamed, so a reader never sees half a report. The
// output depends only on run and res: rendering the same run twice gives the same bytes.
func Write(run *history.Run, res *checker.Result) error {
	return WriteWithOptions(run, res, Options{})
}

// WriteWithOptions is Write with options.
func WriteWithOptions(run *history.Run, res *checker.Result, opts Options) error {
	v, err := newView(run, res)
	if err != nil {
		return err
	}
	return v.write(opts)
}

// ErrSummary wraps an error of writing the summary to its writer, after the report
// files were written.
var ErrSummary = errors.New("reports: summary not written")

// WriteAndSummarize is Write followed by Summary to w, deriving what they show from the
// run once: on a long run that derivation is most of a report's cost. A failure to
// write the files is returned before anything is printed; a failure to print the
// summary wraps ErrSummary.
func WriteAndSummarize(w io.Writer, run *history.Run, res *checker.Result) error {
	v, err := newView(run, res)
	if err != nil {
		return err
	}
	if err := v.write(Options{}); err != nil {
		return err
	}
	if err := v.summary(w); err != nil {
		return fmt.Errorf("%w: %v", ErrSummary, err)
	}
	return nil
}

func (v *view) write(opts Options) error {
	run := v.run
	if run.Dir == "" {
		return fmt.Errorf("reports: run has no directory")
	}
	v.setOptions(opts)
	var rj, md, page, ju bytes.Buffer
	r := v.results(v.limit)
	if err := writeJSON(&rj, r); err != nil {
		return fmt.Errorf("reports: %s: %w", ResultsFile, err)
	}
	fullPath := filepath.Join(run.Dir, FullResultsFile)
	if v.full != "" {
		var full bytes.Buffer
		fr := v.results(-1)
		fr.Files = r.Files
		if err := writeFullJSON(&full, fr); err != nil {
			return fmt.Errorf("reports: %s: %w", FullResultsFile, err)
		}
		if err := writeFile(fullPath, full.Bytes()); err != nil {
			return err
		}
	} else if err := os.Remove(fullPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reports: %w", err) // an earlier one would contradict results.json
	}
	v.markdown(&md)
	if err := v.html(&page); err != nil {
		return fmt.Errorf("reports: %s: %w", HTMLFile, err)
	}
	if err := v.junit(&ju); err != nil {
		return fmt.Errorf("reports: %s: %w", JUnitFile, err)
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{ResultsFile, rj.Bytes()}, {MarkdownFile, md.Bytes()}, {HTMLFile, page.Bytes()}, {JUnitFile, ju.Bytes()}} {
		if err := writeFile(filepath.Join(run.Dir, f.name), f.b); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// link is a file of the run directory, for the reports' file lists.
type link struct {
	Name, Href, What string
}

// links lists the run directory's files: the reports, the visualizations of failing
// checks, then the raw inputs that exist.
func (v *view) links() []link {
	out := []link{
		{HTMLFile, HTMLFile, "this report with the timeline"},
		{MarkdownFile, MarkdownFile, "this report in Markdown"},
		{ResultsFile, ResultsFile, "machine-readable results (schema " + Schema + ")"},
	}
	if v.full != "" {
		out = append(out, link{v.full, v.full, "the same with every list complete, gzipped"})
	}
	out = append(out, link{JUnitFile, JUnitFile, "one test case per check, for CI"})
	for _, c := range v.res.Checks {
		if c.Visualization != "" {
			out = append(out, link{c.Visualization, c.Visualization, "porcupine visualization of the failing piece (" + c.Name + ")"})
		}
	}
	for _, f := range v.files {
		what, name := "", strings.TrimSuffix(f, gzSuffix)
		switch {
		case f == history.RunInfoFile:
			what = "how the run was made"
		case f == "schedule.json":
			what = "the fault schedule generated from the seed"
		case name == history.FaultsFile:
			what = "the faults as injected and healed"
		case name == history.AuditFile:
			what = "the audit stream of the final read of the store"
		case f == history.StoreFile:
			what = "the final read of the store, with the sink and the audit stream"
		case strings.HasPrefix(f, history.HistoryDir+"/"):
			what = "history of " + strings.TrimSuffix(filepath.Base(name), ".jsonl")
		case strings.HasPrefix(f, history.LogsDir+"/"):
			what = "log of " + strings.TrimSuffix(filepath.Base(f), ".log")
		}
		if name != f {
			what += " (gzipped)"
		}
		out = append(out, link{f, f, what})
	}
	return out
}

// allFiles lists, for results.json, the raw files, the visualizations and the reports.
func (v *view) allFiles() []string {
	out := slices.Clone(v.files)
	for _, c := range v.res.Checks {
		if c.Visualization != "" {
			out = append(out, c.Visualization)
		}
	}
	out = append(out, ResultsFile, MarkdownFile, HTMLFile, JUnitFile)
	if v.full != "" {
		out = append(out, v.full)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
