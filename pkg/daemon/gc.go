package daemon

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the daemon's GOGC unless the environment sets one.
//
// Go's default (100) lets the heap grow to twice the live heap before the
// next collection, and most of the daemon's resident heap was that headroom,
// not data: under the load (100 pods, a NodeImage of 256 tags) the
// live heap is about 4 MB, while with GOGC=100 the heap in use reached
// 10.6 MB and RssAnon 13.8 MiB; with 25 the heap in use stays near 6 MB and
// RssAnon near 9.8 MiB. A soft memory limit (GOMEMLIMIT) on top gained
// nothing more in the same runs and made the collector run continuously
// once reached, so none is set (BENCHMARKS.md, "Daemon footprint"). The
// cost is more frequent collections of a small heap during bursts (pulls,
// pod churn); while idle the daemon allocates a few kB a second (probes,
// heartbeat), so collections stay rare.
const DefaultGCPercent = 25

// ApplyGCDefaults sets DefaultGCPercent unless $GOGC is set, so that an
// operator's value always wins. It reports whether it set it.
func ApplyGCDefaults() bool {
	return applyGCDefaults(os.LookupEnv, debug.SetGCPercent)
}

func applyGCDefaults(lookup func(string) (string, bool), setPercent func(int) int) bool {
	if _, ok := lookup("GOGC"); ok {
		return false
	}
	setPercent(DefaultGCPercent)
	return true
}
