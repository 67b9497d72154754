//go:build race

package checker

// raceEnabled shrinks the larger tests under the race detector.
const raceEnabled = true
