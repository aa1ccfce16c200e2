package daemon

import (
	"context"
	"os"
	"runtime/debug"

	"k8s.io/klog/v2"
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

// RunProcess runs the daemon as the kruise-daemon process does: Run, after
// setting the garbage collector's target to DefaultGCPercent unless $GOGC is
// set, so that an operator's value always wins. Run itself leaves the
// collector alone: it is the whole process's, which tests running the daemon
// in-process must keep.
func RunProcess(ctx context.Context, o *Options) error {
	if applyGCDefaults(os.LookupEnv, debug.SetGCPercent) {
		klog.FromContext(ctx).Info("GOGC is not set; using the daemon's default", "gogc", DefaultGCPercent)
	}
	return Run(ctx, o)
}

// applyGCDefaults sets DefaultGCPercent through setPercent unless lookup
// finds $GOGC. It reports whether it set it.
func applyGCDefaults(lookup func(string) (string, bool), setPercent func(int) int) bool {
	if _, ok := lookup("GOGC"); ok {
		return false
	}
	setPercent(DefaultGCPercent)
	return true
}
