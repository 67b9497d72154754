// Package node assembles one fenceline node: the elector and the fenced listener on one
// Redis client, the history recorder, and the control endpoint (/status, /health,
// /metrics). It is `fenceline node` without its parsing and exit codes (AddFlags registers
// its flags).
//
// What exists only to break or probe the node — the broken variants, the clock fault
// hook (POST /fault/clock), the register workload — is compiled in a chaos build only
// (go build -tags chaos). A default build runs the reference design and nothing else:
// asked for anything else, it says that a chaos build is needed.
//
// Config.Target swaps the elector for a lock library's (package targets): a -fenced target
// keeps the fenced store and runs in any build; an unfenced one writes with the plain
// store of the variants and, like them, needs a chaos build and --chaos.
package node
