//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// daemonSample is the value of one series, written as the exposition does (name{labels}), on the
// daemon's /metrics of this node; 0 when it is absent. Counters only grow while the daemon runs, so
// a test reads one before and after its work and checks the difference, whatever ran beside it.
func daemonSample(ctx context.Context, t *testing.T, series string) float64 {
	t.Helper()
	metrics := httpGet(ctx, t, "http://127.0.0.1:10223/metrics")
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(metrics)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(m[1]), 64)
	if err != nil {
		t.Fatalf("daemon /metrics: %s has value %q: %v", series, m[1], err)
	}
	return v
}

// requireDaemonCounted checks that series grew by at least want since before.
func requireDaemonCounted(ctx context.Context, t *testing.T, series string, before, want float64) {
	t.Helper()
	if got := daemonSample(ctx, t, series) - before; got < want {
		t.Errorf("daemon /metrics: %s grew by %v, want at least %v", series, got, want)
	}
}

// leaderSample is the value of one series on the leading kruise-controller's /metrics (0 when
// absent), read through each replica's health socket.
func leaderSample(ctx context.Context, f *framework.Framework, series string) (float64, error) {
	pods, err := f.ControllerPods(ctx)
	if err != nil {
		return 0, err
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !framework.PodReady(&p) {
			continue
		}
		metrics, err := framework.ControllerMetrics(ctx, p.Name)
		if err != nil {
			return 0, err
		}
		if !strings.Contains(metrics, `leader_election_master_status{name="kruise-controller"} 1`) {
			continue
		}
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(metrics)
		if m == nil {
			return 0, nil
		}
		return strconv.ParseFloat(m[1], 64)
	}
	return 0, fmt.Errorf("no Ready kruise-controller replica leads")
}

// requireLeaderCounted waits a little for series on the leader to grow by at least want since
// before: the controller counts what its informer delivers, which may come after the test saw it.
func requireLeaderCounted(ctx context.Context, t *testing.T, f *framework.Framework, series string, before, want float64) {
	t.Helper()
	framework.WaitFor(ctx, t, 15*time.Second, series+" counted on the leader", func(ctx context.Context) (bool, string, error) {
		v, err := leaderSample(ctx, f, series)
		if err != nil {
			return false, "", framework.Retry(err)
		}
		return v-before >= want, fmt.Sprintf("grew by %v", v-before), nil
	})
}
