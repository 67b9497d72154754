//go:build chaos

package mutants

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// GremlinsVersion is the gremlins release `make mutants` installs (bin/gremlins).
const GremlinsVersion = "v0.6.0"

// GoScope is a Go file (relative to the module's root) and the functions of it whose
// mutants count (methods by their name alone).
type GoScope struct {
	File  string
	Funcs []string
}

// gremlinsReplacements is gremlins' table of what each of its operator types makes of
// a token (github.com/go-gremlins/gremlins internal/engine/mappings.go, v0.6.0), for the
// types its dry run is asked for.
var gremlinsReplacements = map[string]map[string]string{
	"ARITHMETIC_BASE":       {"+": "-", "*": "/", "/": "*", "%": "*", "-": "+"},
	"CONDITIONALS_BOUNDARY": {">=": ">", ">": ">=", "<=": "<", "<": "<="},
	"CONDITIONALS_NEGATION": {"==": "!=", ">=": "<", ">": "<=", "<=": ">", "<": ">=", "!=": "=="},
	"INCREMENT_DECREMENT":   {"--": "++", "++": "--"},
	"INVERT_LOGICAL":        {"&&": "||", "||": "&&"},
	"INVERT_LOOPCTRL":       {"break": "continue", "continue": "break"},
	"INVERT_NEGATIVES":      {"-": "+"},
}

// gremlinsReport is the part of gremlins' --output file read here.
type gremlinsReport struct {
	Files []struct {
		FileName  string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

// GremlinsMutants runs gremlins' dry run (bin, in module root repo) on the package of
// each scope and returns the mutants it lists inside the scopes' functions, whatever
// their coverage by the unit tests (the harness may kill what no unit test reaches).
// A scope whose file or function is missing is an error: the scope must not shrink
// silently.
func GremlinsMutants(ctx context.Context, bin, repo string, scopes []GoScope) ([]Mutant, error) {
	byPkg := map[string][]GoScope{}
	var pkgs []string
	for _, s := range scopes {
		dir := path.Dir(s.File)
		if _, ok := byPkg[dir]; !ok {
			pkgs = append(pkgs, dir)
		}
		byPkg[dir] = append(byPkg[dir], s)
	}
	// Each dry run measures its package's coverage with its unit tests: side by side.
	reports := make([]*gremlinsReport, len(pkgs))
	errs := make([]error, len(pkgs))
	var wg sync.WaitGroup
	for i, dir := range pkgs {
		wg.Go(func() { reports[i], errs[i] = dryRun(ctx, bin, repo, dir) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []Mutant
	for i, dir := range pkgs {
		report := reports[i]
		for _, s := range byPkg[dir] {
			ms, err := scopeMutants(repo, s, report)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	return out, nil
}

// dryRun runs `gremlins unleash --dry-run` on package dir of repo.
func dryRun(ctx context.Context, bin, repo, dir string) (*gremlinsReport, error) {
	tmp, err := os.MkdirTemp("", "gremlins-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	outFile := filepath.Join(tmp, "report.json")
	cmd := exec.CommandContext(ctx, bin, "unleash", "--dry-run", "--silent", "--invert-logical", "--invert-loopctrl",
		"--tags", "chaos,failpoints", "--output", outFile, "./"+dir)
	cmd.Dir = repo
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mutants: gremlins dry run of ./%s: %w: %s", dir, err, tail(b, 600))
	}
	b, err := os.ReadFile(outFile)
	if err != nil {
		return nil, fmt.Errorf("mutants: gremlins wrote no report for ./%s: %w", dir, err)
	}
	var r gremlinsReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("mutants: gremlins report of ./%s: %w", dir, err)
	}
	return &r, nil
}

// scopeMutants turns the report's mutations of s.File inside s.Funcs into Mutants.
func scopeMutants(repo string, s GoScope, r *gremlinsReport) ([]Mutant, error) {
	src, err := os.ReadFile(filepath.Join(repo, s.File))
	if err != nil {
		return nil, fmt.Errorf("mutants: %w", err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, s.File, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	type span struct {
		name           string
		from, to, line int
	}
	var spans []span
	for _, name := range s.Funcs {
		found := false
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == name {
				p := fset.Position(fd.Pos())
				spans = append(spans, span{name, p.Offset, fset.Position(fd.End()).Offset, p.Line})
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("mutants: %s has no function %s", s.File, name)
		}
	}
	lineStarts := []int{0}
	for i, c := range src {
		if c == '\n' {
			lineStarts = append(lineStarts, i+1)
		}
	}
	base := path.Base(s.File)
	var out []Mutant
	for _, file := range r.Files {
		if file.FileName != base && file.FileName != s.File {
			continue
		}
		for _, mu := range file.Mutations {
			if mu.Line < 1 || mu.Line > len(lineStarts) {
				return nil, fmt.Errorf("mutants: gremlins: %s:%d:%d is outside the file", s.File, mu.Line, mu.Column)
			}
			off := lineStarts[mu.Line-1] + mu.Column - 1
			i := slices.IndexFunc(spans, func(sp span) bool { return off >= sp.from && off < sp.to })
			if i < 0 {
				continue
			}
			tok := goTokenAt(src, off)
			repl, ok := gremlinsReplacements[mu.Type][tok]
			if !ok {
				return nil, fmt.Errorf("mutants: gremlins: %s at %s:%d:%d is %q, which the table does not mutate", mu.Type, s.File, mu.Line, mu.Column, tok)
			}
			out = append(out, Mutant{
				// Named within its function, so that the name outlives edits elsewhere.
				ID:   fmt.Sprintf("%s:%s+%d:%d:%s", path.Dir(s.File), spans[i].name, mu.Line-spans[i].line, mu.Column, mu.Type),
				File: s.File, Package: "./" + path.Dir(s.File), Operator: mu.Type,
				Line: mu.Line, Offset: off, Old: tok, New: repl,
			})
		}
	}
	// gremlins lists a file's mutations in no fixed order (seen to differ between two dry
	// runs of one tree), and a sample picks by position.
	slices.SortFunc(out, func(a, b Mutant) int {
		return cmp.Or(cmp.Compare(a.Offset, b.Offset), strings.Compare(a.New, b.New), strings.Compare(a.Operator, b.Operator))
	})
	// Binary minus: ARITHMETIC_BASE and INVERT_NEGATIVES make the same change; the first
	// in that order stays.
	out = slices.CompactFunc(out, func(a, b Mutant) bool { return a.Offset == b.Offset && a.New == b.New })
	return out, nil
}

// goTokenAt returns the text of the Go token that starts at byte off of src.
func goTokenAt(src []byte, off int) string {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return ""
		}
		if p := file.Offset(pos); p == off {
			if lit != "" {
				return lit
			}
			return tok.String()
		} else if p > off {
			return ""
		}
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
