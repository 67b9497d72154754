package listener

// OpKind names a store request that a Recorder is told about.
type OpKind string

// Store requests.
const (
	OpLoad   OpKind = "load"
	OpCommit OpKind = "commit"
	OpWrite  OpKind = "write" // a fenced write that moves no cursor
)

// Op is one store request.
type Op struct {
	// ID is the operation's id (see OpIDs); a commit's is also in the store's audit.
	ID   string
	Kind OpKind
	// Token, From, To and Events describe a commit: the writer's token, the cursor move
	// it asks for and the number of events in its batch. A write has only Token.
	Token, From, To int64
	Events          int
}

// Result is what became of a recorded request.
type Result struct {
	// Outcome is OutcomeOK, a rejection (OutcomeStaleToken, OutcomeCursorConflict,
	// OutcomeBadArgument: certainly not applied), OutcomeBodyError (a fenced body failed
	// after the fence) or OutcomeUnknown (no answer: a commit may have been applied).
	Outcome Outcome
	// Cursor and Token are what an OK load read.
	Cursor, Token int64
	// Err is the cause of OutcomeUnknown.
	Err error
}

// Recorder records every store request, for a history of what a node did: the chaos
// harness's checker reads one (docs/history.md).
//
// A store calls Invoke just before it sends a request and calls the returned function
// exactly once with the result. A request that is never sent (an invalid batch, a
// context already done) is not recorded. Both run on the commit path: they must not
// block for long, and must be safe for concurrent use.
type Recorder interface {
	Invoke(op Op) (complete func(Result))
}

type nopRecorder struct{}

func (nopRecorder) Invoke(Op) func(Result) { return func(Result) {} }
