// Package reports renders a checked run: it turns a run directory (history.Run) and
// the checker's verdict (checker.Result) into the files a person or a CI system reads.
//
// [Write] writes four files into the run directory, next to the history:
//
//   - results.json: the machine-readable result, schema "fenceline/results/v1" (below).
//   - report.md: the verdict and every failing check's violations first (with a link to
//     the porcupine visualization of a failing piece), then the tables: run, checks,
//     failover windows per fault kind (min/p50/p90/p99/max), commit gap per fault kind,
//     leader changes, fencing rejections, the fault schedule, the largest leadership
//     overlaps and the operation counts. Tables are rendered by tablewriter.
//   - index.html: one self-contained page (inline CSS, script and SVG; it fetches
//     nothing) with the same content and a timeline: a lane per node showing when it
//     followed, led (labelled with its token), was down, paused, cut off, slowed or had
//     its clock skewed; fault bands coloured by kind; each failover window; and the
//     rate of accepted commits.
//   - junit.xml: one testsuite with one testcase per check. An invalid check is a
//     <failure>; an unknown one is an <error> (not <skipped>, which CI systems show as
//     harmless): a check that could not decide is never a pass. A run with no check, or
//     an interrupted one, gets an extra "run" testcase with an <error>. The file follows
//     the Jenkins/Ant JUnit schema (testdata/junit.xsd).
//
// [Summary] prints the same content as report.md for a terminal.
//
// What the package guarantees: the output depends only on the run and the result (no
// clock, no host name, maps sorted), so rendering a stored run again gives the same
// bytes; times are shown relative to the run's start ("t+1.234s"), as in the checker's
// messages; a run is shown as passing only when the checker's verdict is valid, the run
// was completed and at least one check ran. What it does not do: judge anything. The
// leader changes and fencing rejections it lists are read from the history the same
// way the checker counts them, and the counts shown are the checker's.
//
// # results.json, schema fenceline/results/v1
//
// Durations are integers in nanoseconds and their names end in _ns. Points in time end
// in _at_ns and count nanoseconds from run.start_unix_ns. Lists are never null. Within
// v1 fields are only added; a field removed or redefined gets a new schema version.
//
//	{
//	  "schema": "fenceline/results/v1",
//	  "verdict": "valid" | "invalid" | "unknown",   // the run's verdict; a CI gate reads this
//	  "summary": "2 of 8 checks failed: no-stale-write, linearizability.",
//	  "run": {
//	    "seed": 42, "nodes": ["n1","n2","n3"], "workload": "listener",
//	    "variant": "reference", "backend": "local", "nemeses": ["kill","pause"],
//	    "election": "fenceline", "lease_ttl_ns": 2000000000, "duration_ns": 60000000000,
//	    "persistence": true, "versions": {"fenceline": "…", "go": "…"},
//	    "start": "2025-01-02T03:04:05.6Z", "end": "…",   // RFC 3339, UTC
//	    "start_unix_ns": …, "end_unix_ns": …, "elapsed_ns": …,
//	    "heal_at_ns": … | null,                       // the final heal of every fault
//	    "interrupted": "…"                            // only when the run stopped early
//	  },
//	  "checks": [{                                    // in the checker's order
//	    "name": "linearizability", "verdict": "invalid", "message": "…",
//	    "offending": ["…"],                           // first offending operations
//	    "visualization": "linearizability-piece-0.html",  // relative; omitted if none
//	    "stats": {"ops": 812, …}                      // check-specific; omitted if none
//	  }],
//	  "failover": [{                                  // per fault kind, sorted by kind
//	    "fault": "kill", "injected": 4, "windows": 3,
//	    "to_new_token": {"count": 3, "min_ns": …, "p50_ns": …, "p90_ns": …, "p99_ns": …, "max_ns": …},
//	    "gap": {…same…}                               // last old-term to first new-term commit
//	  }],
//	  "windows": [{"fault", "fault_node", "injected_at_ns", "old_node", "old_token",
//	               "new_node", "new_token", "last_old_at_ns", "first_new_at_ns",
//	               "to_new_token_ns", "gap_ns"}],
//	  "leader_changes": 7, "fencing_rejections": 2, "cursor_conflicts": 0,
//	  "changes": [{"at_ns", "old_node", "old_token", "new_node", "new_token",
//	               "last_old_at_ns", "gap_ns", "fault"?, "fault_node"?}],
//	  "rejections": [{"at_ns", "node", "op", "token", "from", "to",
//	                  "store_token",                  // highest token accepted before; 0 if unknown
//	                  "seen_by": "node" | "audit"}],  // audit: the node never learned the outcome
//	  "terms": [{"node", "token", "start_at_ns", "end_at_ns", "end_reason", "commits",
//	             "first_commit_at_ns": … | null, "last_commit_at_ns": … | null}],
//	  "overlaps": [{"node_a", "token_a", "node_b", "token_b", "start_at_ns", "end_at_ns", "duration_ns"}],
//	  "faults": [{"id", "kind", "target", "injected_at_ns", "healed_at_ns": … | null,
//	              "held_ns": … | null, "failed", "error"?, "detail"?}],
//	  "ops": {"total", "loads", "commits", "acquires", "renews", "releases", "step_downs",
//	          "faults", "ok", "fail", "unknown", "unknown_commits", "resolved_by_audit"},
//	  "store": {"cursor", "max_token", "token_counter", "sink_events", "audit_entries",
//	            "sink_lost", "sink_duplicated"} | null,   // events 1..cursor missing from the sink; repeats
//	  "files": ["faults.jsonl", "history/n1.jsonl", …, "results.json"],   // relative, sorted
//	  "check_duration_ns": …
//	}
//
// For example, a CI step can gate on `jq -e '.verdict == "valid"' results.json` and
// chart `.failover[] | {fault, p99: .to_new_token.p99_ns}`.
package reports
