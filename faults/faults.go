package faults

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Fault kinds.
const (
	Kill                 = "kill"                   // SIGKILL, restart at heal
	Stop                 = "stop"                   // SIGTERM (graceful release), restart at heal
	Pause                = "pause"                  // SIGSTOP longer than the lease, SIGCONT at heal
	PartitionReset       = "partition-reset"        // node's Redis link refused/reset
	PartitionBlackhole   = "partition-blackhole"    // node's Redis link silently drops data
	Delay                = "delay"                  // latency longer than the lease on the node's Redis link
	Clock                = "clock"                  // node's injected clock jumped or slowed
	RedisRestart         = "redis-restart"          // Redis killed and restarted (append-only file on)
	RedisRestartVolatile = "redis-restart-volatile" // the same without persistence: tokens repeat
)

// All returns every fault kind that the reference implementation must survive:
// `--nemesis all`. RedisRestartVolatile is not in it: without persistence tokens repeat
// by design. The slice is new at each call.
func All() []string {
	return []string{Kill, Stop, Pause, PartitionReset, PartitionBlackhole, Delay, Clock, RedisRestart}
}

// Known returns every fault kind. The slice is new at each call.
func Known() []string { return append(All(), RedisRestartVolatile) }

// IsKnown reports whether kind is a fault kind.
func IsKnown(kind string) bool { return slices.Contains(Known(), kind) }

// ErrUnknown is returned for a fault name that is not known.
var ErrUnknown = errors.New("unknown fault")

// ParseList parses a comma-separated list of fault kinds: "all", "none", and "partition"
// (both partition flavours) are accepted. The result is sorted and without duplicates.
// An unknown name is an error wrapping ErrUnknown that lists the known ones.
func ParseList(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		switch f = strings.TrimSpace(f); f {
		case "":
		case "none":
		case "all":
			out = append(out, All()...)
		case "partition":
			out = append(out, PartitionReset, PartitionBlackhole)
		default:
			if !IsKnown(f) {
				return nil, fmt.Errorf("%w: %q (known: %s, all, none)", ErrUnknown, f, strings.Join(Known(), ", "))
			}
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}
