package checker

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// regState is the fenced cursor register: the cursor and the highest accepted token.
// It is comparable, so porcupine may compare states with ==.
type regState struct {
	cursor, token int64
}

// regInput is a load (commit false), a commit of (token, from, to), or a write of
// token that moves no cursor (commit and write true).
type regInput struct {
	commit, write   bool
	token, from, to int64
}

// regOutput is what an operation returned: a commit's outcome (outOK = accepted,
// outStale, outConflict, outUnknown), or an ok load's cursor and token.
type regOutput struct {
	out           outcome
	cursor, token int64
}

// regStep is the register's sequential specification. A commit is accepted exactly
// when its token is at least the highest accepted one and the cursor equals its from.
// A write has no cursor to check: it is accepted exactly when its token is, is never
// told cursor-conflict, and leaves the cursor as it was.
//
// A commit of unknown outcome steps as the store would: it applies if it can and is a
// no-op otherwise. That is as permissive as "it may or may not have happened", because
// an operation with an unknown outcome is either open until the end of the history
// (Return = MaxInt64: placed last, its effect is observed by nobody) or bounded by an
// operation that proves it can no longer apply (see boundUnknowns): placed after that
// operation it is a no-op.
func regStep(s regState, in regInput, out regOutput) (bool, regState) {
	if !in.commit {
		return out.cursor == s.cursor && out.token == s.token, s
	}
	fresh := in.token >= s.token
	can := fresh && (in.write || s.cursor == in.from)
	after := regState{cursor: in.to, token: in.token}
	if in.write {
		after.cursor = s.cursor
	}
	switch out.out {
	case outOK:
		if can {
			return true, after
		}
		return false, s
	case outStale:
		return !fresh, s
	case outConflict:
		return !in.write && fresh && s.cursor != in.from, s
	case outUnknown:
		if can {
			return true, after
		}
		return true, s
	}
	return false, s
}

// registerModel returns the porcupine model of the register starting in init.
// describe names an operation from its metadata (for the visualization).
func registerModel(init regState, describe func(meta any) string) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return init },
		Step: func(state, input, output any) (bool, any) {
			return regStep(state.(regState), input.(regInput), output.(regOutput))
		},
		Equal: func(a, b any) bool { return a.(regState) == b.(regState) },
		Hash: func(state any) uint64 {
			s := state.(regState)
			return uint64(s.cursor)*0x9e3779b97f4a7c15 ^ uint64(s.token)
		},
		DescribeOperation: func(input, output any) string {
			return describeRegOp(input.(regInput), output.(regOutput))
		},
		DescribeState: func(state any) string {
			s := state.(regState)
			return fmt.Sprintf("cursor=%d token=%d", s.cursor, s.token)
		},
		DescribeOperationMetadata: describe,
	}
}

func describeRegOp(in regInput, out regOutput) string {
	if !in.commit {
		return fmt.Sprintf("load() → cursor=%d token=%d", out.cursor, out.token)
	}
	res, what := "?", fmt.Sprintf("commit(token=%d, %d→%d)", in.token, in.from, in.to)
	if in.write {
		what = fmt.Sprintf("write(token=%d)", in.token)
	}
	switch out.out {
	case outOK:
		res = "accepted"
	case outStale:
		res = "stale-token"
	case outConflict:
		res = "cursor-conflict"
	case outUnknown:
		res = "unknown"
	}
	return what + " → " + res
}
