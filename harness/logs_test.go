package harness_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// eventName is the shape of every log message: a constant event name, the data in
// attributes (STYLE §7).
var eventName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// errorKey is the one attribute name for an error, in every package (as in the
// nodes' JSON logs and the history's error field).
const errorKey = "error"

// pendingLogs lists files whose messages are not converted yet, each with why.
var pendingLogs = map[string]string{}

// slogMessageArg is the index of the message argument of a slog.Logger method.
var slogMessageArg = map[string]int{
	"Debug": 0, "Info": 0, "Warn": 0, "Error": 0,
	"DebugContext": 1, "InfoContext": 1, "WarnContext": 1, "ErrorContext": 1,
	"Log": 2, "LogAttrs": 2,
}

// TestLogEventNames reads every non-test Go file of the module and checks each slog
// call: its message is a constant kebab-case event name, and an error goes under the
// key "error", never "err".
func TestLogEventNames(t *testing.T) {
	root := filepath.Join("..")
	fset := token.NewFileSet()
	calls := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if _, ok := pendingLogs[filepath.ToSlash(rel)]; ok {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			// slog.String("err", ...), slog.Any("err", ...): the attribute constructors.
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "slog" && len(call.Args) > 0 {
				if k, ok := stringLit(call.Args[0]); ok && k == "err" {
					t.Errorf("%s: error attribute %q, want %q", fset.Position(call.Pos()), k, errorKey)
				}
			}
			idx, ok := slogMessageArg[sel.Sel.Name]
			if !ok || !isLogger(sel.X) || len(call.Args) <= idx {
				return true
			}
			calls++
			msg, ok := stringLit(call.Args[idx])
			if !ok {
				t.Errorf("%s: log message is not a constant string", fset.Position(call.Pos()))
				return true
			}
			if !eventName.MatchString(msg) {
				t.Errorf("%s: log message %q is not an event name (kebab-case)", fset.Position(call.Pos()), msg)
			}
			for i := idx + 1; i < len(call.Args); i += 2 {
				if k, ok := stringLit(call.Args[i]); ok && k == "err" {
					t.Errorf("%s: error attribute %q, want %q", fset.Position(call.Pos()), k, errorKey)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 20 {
		t.Fatalf("found only %d slog calls: the scan is broken", calls)
	}
}

// isLogger is a heuristic: the receiver is named like a logger (log, logger, l.log,
// cfg.Logger, slog).
func isLogger(x ast.Expr) bool {
	switch e := x.(type) {
	case *ast.Ident:
		n := strings.ToLower(e.Name)
		return strings.Contains(n, "log")
	case *ast.SelectorExpr:
		return strings.Contains(strings.ToLower(e.Sel.Name), "log")
	case *ast.CallExpr: // slog.Default().Info(...), l.With(...).Info(...)
		if s, ok := e.Fun.(*ast.SelectorExpr); ok {
			return isLogger(s.X) || s.Sel.Name == "Default"
		}
	}
	return false
}

func stringLit(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}
