//go:build chaos

// Package soak runs many seeded all-fault chaos runs one after another and sums them up
// in one table: runs valid, invalid and unknown; events ingested, lost or duplicated;
// leader changes; the worst failover window per fault kind; and the peak memory of the
// runner and of Redis.
//
// Each run is a subprocess, `fenceline chaos --duration D --seed S --out SLOT --quiet`,
// so that a crash of one run does not end the soak and the runner's peak memory is read
// exactly from the child's resource usage when it is reaped. On Linux that figure is
// the largest resident set of the runner and of the processes it reaped itself (its
// nodes and redis-server, all smaller than the runner in practice); Redis's own peak is
// its used_memory_peak, which the harness records in run.json.
//
// Run i of a soak with base seed S0 has seed S0+i and lives in the slot directory
// OUT/run-NNN (NNN = i, zero-padded), next to a marker file, soak-run.json, that the
// soak writes when the child has exited. What the package guarantees:
//
//   - One binary: the soak copies the fenceline binary it was given at its start and
//     every run executes that copy, so a rebuild of the checkout during a soak of
//     hours does not change what is tested. Each run records the copy's SHA-256
//     prefix; the summary lists them (more than one: not one build).
//   - Determinism: the same base seed and run count give the same seeds, whatever the
//     sharding. Shard i/N takes the indices j with j mod N = i-1, so N shards are
//     disjoint and together cover every run.
//   - Resume: a slot whose marker says the run finished (whatever its verdict) is not
//     run again, nor is a slot holding a finished results.json without a marker (the
//     soak was killed after the run). A slot that exists but holds neither (a run
//     interrupted by Ctrl-C or a killed soak) is moved aside to run-NNN.incomplete-K
//     and run afresh: the chaos command creates its run directory inside the slot, so
//     rerunning in place would leave two runs in one slot, and deleting it would throw
//     away the evidence of what happened. Moved-aside slots are never read again.
//   - An unknown run is counted as unknown, never retried: only an interrupted or
//     unfinished slot is rerun.
//   - The verdict of a soak is Invalid if any run is invalid; else Unknown if any run
//     is unknown or a planned run is missing; Valid only when every planned run is
//     there and valid.
//
// What it does not do: judge a run. The numbers are read from each run's results.json
// (totals and per-fault-kind percentiles only) and run.json; the verdicts are the
// checker's, combined with the chaos command's exit code (a run whose command failed
// is never valid).
package soak
