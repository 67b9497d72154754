package checker

import "time"

// Summarize returns the distribution of ds with the nearest-rank percentiles that
// FailoverStats uses, so that windows pooled across runs (`fenceline targets`) are
// summarized the same way as one run's. ds is not modified.
func Summarize(ds []time.Duration) Distribution { return distribution(ds) }
