// Package reports renders a checked run: it turns a run directory (history.Run) and
// the checker's verdict (checker.Result) into the files a person or a CI system reads.
//
// [Write] writes four files into the run directory, next to the history:
//
//   - results.json: the machine-readable result, schema "fenceline/results/v2" (below).
//     Its size is bounded whatever the run's length: each long list keeps its first and
//     last N items (Options.ListLimit, default 50). When a list was cut, the complete
//     lists go to results-full.json.gz (the same schema, nothing left out).
//   - report.md: the verdict and every failing check's violations first (with a link to
//     the porcupine visualization of a failing piece), then the tables: run, checks,
//     failover windows per fault kind (min/p50/p90/p99/max), commit gap per fault kind,
//     leader changes, fencing rejections, the fault schedule, the largest leadership
//     overlaps and the operation counts. Tables are rendered by tablewriter. A long
//     table shows its first and last rows with a "… N more" row between them, and
//     each failing check at most its first and last 10 offending operations. A run
//     that did not pass ends with the way back: the commands `fenceline-chaos chaos
//     --replay DIR` and `fenceline-chaos shrink DIR`, DIR the run's directory as the
//     renderer was given it (index.html ends with them too).
//   - index.html: one self-contained page (inline CSS, script and SVG; it fetches
//     nothing) with the same content and a timeline: a lane per node showing when it
//     followed, led (labelled with its token), was down, paused, cut off, slowed or had
//     its clock skewed; fault bands coloured by kind; each failover window; and the
//     rate of accepted commits. A row with more than 400 boxes draws those that start
//     within the same 1/400 of the width as one (its tooltip counts them), so the page
//     stays about a megabyte however long the run.
//   - junit.xml: one testsuite with one testcase per check, named "<check> (seed N)"
//     in the class fenceline.<target>.<topology>.<store>; the suite's time is the
//     run's length, and its properties carry the failover p50, p99 and n of each fault
//     kind and whether Redis lost acknowledged writes. An invalid check is a
//     <failure>; an unknown one is an <error> (not <skipped>, which CI systems show as
//     harmless): a check that could not decide is never a pass. A run with no check, an
//     interrupted one, or one stopped at a violation the complete check did not
//     confirm, gets an extra "run" testcase with an <error>. The file follows
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
// # results.json, schema fenceline/results/v2
//
// Durations are integers in nanoseconds and their names end in _ns. Points in time end
// in _at_ns and count nanoseconds from run.start_unix_ns. Lists are never null. Within
// v2 fields are only added; a field removed or redefined gets a new schema version.
//
// The long lists (windows, changes, rejections, terms, overlaps, faults, and each
// check's offending) hold their first N and last N items, in order, with N =
// list_limit (default 50): a list of more than 2N items has N items, then, after the
// omitted ones, the last N. "totals" counts each list's items and "omitted" those left
// out of its middle, so for every list len + omitted = total. The counts a CI gate
// reads (verdict, leader_changes, fencing_rejections, failover, ops, store) are always
// complete. With the default N, results.json stays under 1 MB for any run (100,000
// leader changes: 150 KB).
//
// v2 differs from v1 in one way that breaks readers: a list is no longer every item
// of its kind. Count with "totals" (or leader_changes, fencing_rejections), not with
// the length of a list. New in v2: list_limit, totals, omitted, full and each check's
// offending_omitted; added since: each distribution's n and fewer_than_5, and the
// redis_lost_acknowledged_writes finding, each check's first_violation_at_ns and the
// run's first_violation.
// results-full.json.gz, written when a list was cut, is one gzipped JSON document of
// the same schema with list_limit 0, nothing omitted and no "full".
//
//	{
//	  "schema": "fenceline/results/v2",
//	  "verdict": "valid" | "invalid" | "unknown",   // the run's verdict; a CI gate reads this
//	  "summary": "2 of 8 checks failed: no-stale-write, linearizability.",
//	  "redis_lost_acknowledged_writes": false,     // true: an invalid run whose violations Redis caused
//	  "redis_lost_acknowledged_writes_evidence": "…",  // the proof; only when true
//	  "redis_lost_acknowledged_commits": 3,        // acknowledged commits missing from the store; when known
//	  "run": {
//	    "seed": 42, "nodes": ["n1","n2","n3"], "workload": "listener",
//	    "variant": "reference", "backend": "local", "nemeses": ["kill","pause"],
//	    "election": "fenceline", "lease_ttl_ns": 2000000000, "duration_ns": 60000000000,
//	    "persistence": true, "versions": {"fenceline": "…", "go": "…"},
//	    "start": "2025-01-02T03:04:05.6Z", "end": "…",   // RFC 3339, UTC
//	    "start_unix_ns": …, "end_unix_ns": …, "elapsed_ns": …,
//	    "heal_at_ns": … | null,                       // the final heal of every fault
//	    "interrupted": "…",                           // only when the run stopped early
//	    "stopped_at_violation": "…",                  // only when --stop-at-violation ended it
//	    "start_token": …, "start_cursor": …           // where the run began; omitted when 0
//	  },
//	  "checks": [{                                    // in the checker's order
//	    "name": "linearizability", "verdict": "invalid", "message": "…",
//	    "offending": ["…"],                           // first (and last) offending operations
//	    "offending_omitted": 0,                       // left out of offending's middle
//	    "visualization": "linearizability-piece-0.html",  // relative; omitted if none
//	    "first_violation_at_ns": … | null,            // its earliest violation; null unless invalid
//	    "stats": {"ops": 812, …}                      // check-specific; omitted if none
//	  }],
//	  "first_violation": {"check", "at_ns": … | null, "description"} | null,  // the run's earliest
//	  "failover": [{                                  // per fault kind, sorted by kind
//	    "fault": "kill", "injected": 4, "windows": 3,
//	    "to_new_token": {"count": 3, "n": 3,          // n: the samples the percentiles rest on
//	                     "fewer_than_5": true,        // only when 0 < n < 5: p90, p99 are the maximum
//	                     "min_ns": …, "p50_ns": …, "p90_ns": …, "p99_ns": …, "max_ns": …},
//	    "gap": {…same…}                               // last old-term to first new-term commit
//	  }],
//	  "windows": [{"fault", "fault_node", "injected_at_ns", "old_node", "old_token",
//	               "new_node", "new_token", "last_old_at_ns", "first_new_at_ns",
//	               "to_new_token_ns", "gap_ns"}],
//	  "leader_changes": 7, "fencing_rejections": 2, "cursor_conflicts": 0,
//	  "throughput": {"warmup_ns", "warmup_events", "outside_ns", "outside_events",
//	                 "outside_terms", "source_rate"?},  // omitted when not measured
//	  "changes": [{"at_ns", "old_node", "old_token", "new_node", "new_token",
//	               "last_old_at_ns", "gap_ns",
//	               "cause"?,                          // the checker's: "fault", "stall", "after-heal"; omitted: nothing explains it
//	               "fault"?, "fault_node"?}],
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
//	            "sink_lost", "sink_duplicated"} | null,   // events start_cursor+1..cursor missing from the sink; repeats of them
//	  "files": ["faults.jsonl", "history/n1.jsonl", …, "results.json"],   // relative, sorted
//	  "check_duration_ns": …,
//	  "list_limit": 50,                               // N; 0 in results-full.json.gz
//	  "totals": {"windows", "changes", "rejections", "terms", "overlaps", "faults",
//	             "offending"},                        // items of each list; offending: of every check
//	  "omitted": {…same keys…},                       // items left out of each list's middle
//	  "full": "results-full.json.gz"                  // only when a list was cut and it was written
//	}
//
// For example, a CI step can gate on `jq -e '.verdict == "valid"' results.json` and
// chart `.failover[] | {fault, p99: .to_new_token.p99_ns}`.
package reports
