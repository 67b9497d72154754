//go:build chaos

package mutants

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"path"
	"strconv"
	"strings"
)

// The markers that bound the mutable regions of a script; a script without them is
// mutable whole.
const (
	regionBegin = "-- mutants: begin"
	regionEnd   = "-- mutants: end"
)

// LuaScripts generates the Lua mutants of the named scripts of Go file file (its path
// relative to the module's root; src its content): each script is the raw string
// literal assigned to one of names, directly or as the first argument of a call
// (redis.NewScript). A name not found is an error: the scope must not shrink silently.
func LuaScripts(file string, src []byte, names ...string) ([]Mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	lits := map[string]*ast.BasicLit{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, id := range vs.Names {
			if i >= len(vs.Values) {
				break
			}
			v := vs.Values[i]
			if call, ok := v.(*ast.CallExpr); ok && len(call.Args) > 0 {
				v = call.Args[0]
			}
			if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.HasPrefix(lit.Value, "`") {
				lits[id.Name] = lit
			}
		}
		return true
	})
	var out []Mutant
	for _, name := range names {
		lit, ok := lits[name]
		if !ok {
			return nil, fmt.Errorf("mutants: %s: no Lua script %s (a raw string literal)", file, name)
		}
		start := fset.Position(lit.Pos()).Offset + 1 // after the backquote
		body := src[start : start+len(lit.Value)-2]
		first := lineOf(src, start)
		ms, err := luaMutants(string(body))
		if err != nil {
			return nil, fmt.Errorf("mutants: %s: %s: %w", file, name, err)
		}
		seen := map[string]int{}
		for _, m := range ms {
			m.File, m.Package = file, "./"+path.Dir(file)
			m.Offset += start
			m.Line = lineOf(src, m.Offset)
			// Named within its script, so that the name outlives edits elsewhere in the file.
			col := m.Offset - bytes.LastIndexByte(src[:m.Offset], '\n')
			id := fmt.Sprintf("%s:%d:%d:%s", name, m.Line-first+1, col, m.Operator)
			if seen[id]++; seen[id] > 1 {
				id += "#" + strconv.Itoa(seen[id])
			}
			m.ID = id
			out = append(out, m)
		}
	}
	return out, nil
}

// luaMutants returns the mutants of one script's source (offsets into src).
func luaMutants(src string) ([]Mutant, error) {
	regions, err := mutableRegions(src)
	if err != nil {
		return nil, err
	}
	toks := luaTokens(src)
	in := func(off int) bool {
		for _, r := range regions {
			if off >= r[0] && off < r[1] {
				return true
			}
		}
		return false
	}
	var out []Mutant
	add := func(op string, off int, old, new string) {
		if in(off) {
			out = append(out, Mutant{Operator: op, Offset: off, Old: old, New: new})
		}
	}
	flip := map[string]string{"==": "~=", "~=": "==", "<": "<=", "<=": "<", ">": ">=", ">=": ">"}
	for i, t := range toks {
		switch {
		case t.kind == tokOp && flip[t.text] != "":
			add("LUA_RELATIONAL_FLIP", t.off, t.text, flip[t.text])
		case t.kind == tokNumber:
			if i >= 2 && toks[i-1].text == "[" && (toks[i-2].text == "KEYS" || toks[i-2].text == "ARGV") {
				continue
			}
			n, err := strconv.ParseInt(t.text, 10, 64)
			if err != nil || n == math.MaxInt64 {
				continue // a float or a number too long to shift exactly: not a constant we change
			}
			add("LUA_CONSTANT_PLUS_ONE", t.off, t.text, strconv.FormatInt(n+1, 10))
			add("LUA_CONSTANT_MINUS_ONE", t.off, t.text, strconv.FormatInt(n-1, 10))
		case t.kind == tokName && (t.text == "if" || t.text == "elseif" || t.text == "while"):
			for _, m := range droppedConditions(src, toks, i) {
				add(m.Operator, m.Offset, m.Old, m.New)
			}
		}
	}
	for _, m := range droppedCalls(src) {
		add(m.Operator, m.Offset, m.Old, m.New)
	}
	return out, nil
}

// mutableRegions returns the [start, end) ranges of src between the region markers,
// or all of src when it has none.
func mutableRegions(src string) ([][2]int, error) {
	if !strings.Contains(src, regionBegin) {
		if strings.Contains(src, regionEnd) {
			return nil, fmt.Errorf("%q without %q", regionEnd, regionBegin)
		}
		return [][2]int{{0, len(src)}}, nil
	}
	var out [][2]int
	for off := 0; ; {
		b := strings.Index(src[off:], regionBegin)
		if b < 0 {
			if strings.Contains(src[off:], regionEnd) {
				return nil, fmt.Errorf("%q without %q", regionEnd, regionBegin)
			}
			return out, nil
		}
		b += off + len(regionBegin)
		e := strings.Index(src[b:], regionEnd)
		if e < 0 {
			return nil, fmt.Errorf("%q without %q", regionBegin, regionEnd)
		}
		if nb := strings.Index(src[b:], regionBegin); nb >= 0 && nb < e {
			return nil, fmt.Errorf("nested %q", regionBegin)
		}
		out = append(out, [2]int{b, b + e})
		off = b + e + len(regionEnd)
	}
}

// droppedConditions returns, for the if, elseif or while at toks[i], one mutant per
// top-level and/or operand of its condition that removes it, or, for a lone condition,
// the mutant that makes it true.
func droppedConditions(src string, toks []luaToken, i int) []Mutant {
	end := "then"
	if toks[i].text == "while" {
		end = "do"
	}
	// The condition's operands at depth 0, and the and/or tokens between them.
	var operands [][2]int // token index ranges [from, to)
	var ops []int
	depth, from := 0, i+1
	j := i + 1
	for ; j < len(toks); j++ {
		t := toks[j]
		switch {
		case t.text == "(" || t.text == "{" || t.text == "[":
			depth++
		case t.text == ")" || t.text == "}" || t.text == "]":
			depth--
		case depth == 0 && t.kind == tokName && (t.text == "and" || t.text == "or"):
			operands = append(operands, [2]int{from, j})
			ops = append(ops, j)
			from = j + 1
		}
		if depth == 0 && t.kind == tokName && t.text == end {
			break
		}
	}
	if j == len(toks) || from >= j {
		return nil // not a condition this scanner understands: no mutant rather than a wrong one
	}
	operands = append(operands, [2]int{from, j})
	endOf := func(k int) int { return toks[k].off + len(toks[k].text) } // the end of token k
	if len(operands) == 1 {
		off := toks[operands[0][0]].off
		return []Mutant{{Operator: "LUA_CONDITION_TRUE", Offset: off, Old: src[off:endOf(j-1)], New: "true"}}
	}
	var out []Mutant
	for k, o := range operands {
		var off, to int
		if k < len(ops) { // the operand and the operator after it, up to the next operand
			off, to = toks[o[0]].off, toks[ops[k]+1].off
		} else { // the last: the operator before it and the operand
			off, to = toks[ops[k-1]].off, endOf(o[1]-1)
		}
		out = append(out, Mutant{Operator: "LUA_CONDITION_DROPPED", Offset: off, Old: src[off:to], New: ""})
	}
	return out
}

// droppedCalls returns one mutant per line that is a redis.call (or rcall) statement
// alone, which removes the statement.
func droppedCalls(src string) []Mutant {
	var out []Mutant
	off := 0
	for _, line := range strings.SplitAfter(src, "\n") {
		trim := strings.TrimLeft(line, " \t")
		stmt, _, _ := strings.Cut(strings.TrimRight(trim, "\n"), "--")
		stmt = strings.TrimSpace(stmt)
		if (strings.HasPrefix(stmt, "redis.call(") || strings.HasPrefix(stmt, "rcall(")) && strings.HasSuffix(stmt, ")") &&
			strings.Count(stmt, "(") == strings.Count(stmt, ")") {
			out = append(out, Mutant{Operator: "LUA_CALL_DROPPED", Offset: off + len(line) - len(trim), Old: stmt, New: "-- dropped"})
		}
		off += len(line)
	}
	return out
}

type luaTokenKind int

const (
	tokName luaTokenKind = iota
	tokNumber
	tokString
	tokOp
)

type luaToken struct {
	kind luaTokenKind
	text string
	off  int
}

// luaTokens splits Lua source into names, numbers, strings and operators, skipping
// comments and white space. It knows enough of Lua 5.1 for the scripts here: short
// strings with escapes, line comments (no long brackets).
func luaTokens(src string) []luaToken {
	var out []luaToken
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], "--"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(src))
			out = append(out, luaToken{tokString, src[i:j], i})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.' || src[j] == 'x' || src[j] == 'e') {
				j++
			}
			out = append(out, luaToken{tokNumber, src[i:j], i})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			out = append(out, luaToken{tokName, src[i:j], i})
			i = j
		default:
			n := 1
			for _, op := range []string{"...", "==", "~=", "<=", ">=", ".."} {
				if strings.HasPrefix(src[i:], op) {
					n = len(op)
					break
				}
			}
			out = append(out, luaToken{tokOp, src[i : i+n], i})
			i += n
		}
	}
	return out
}
