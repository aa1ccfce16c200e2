//go:build bench

package bench

import (
	"math"
	"os"
	"strconv"
	"time"
)

// Settings shared by the benchmarks, all overridable from the environment.
var (
	iterations  = envInt("BENCH_ITERATIONS", 20)
	criEndpoint = envStr("BENCH_CRI_ENDPOINT", "/var/tmp/kruise-local/containerd/containerd.sock")
	image       = envStr("BENCH_IMAGE", "127.0.0.1:5000/public/busybox:1.35")
)

// graceSeconds is the benchmark pods' terminationGracePeriodSeconds (and, in the CRR benchmark,
// the StopContainer timeout of the floor arm, so both arms give the container the same grace).
const graceSeconds = 10

func envStr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

// percentile is the nearest-rank percentile of sorted (q in (0, 1]).
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

type stats struct{ p50, p90, min, max time.Duration }
