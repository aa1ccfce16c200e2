//go:build dashboard

package dashboard

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
	"github.com/nodekruise/kruise/test/repo"
)

// Queries that may rightly return nothing on a healthy, quiet cluster, and why. Every other
// query must return at least one series.
var mayBeEmpty = map[int]string{
	204: "series only for nodes where a CRR waits on an absent daemon (a failure state)",
	305: "the pull duration histogram has series only after a pull since the daemon started",
	603: "filtered to reasons with a denial in the range",
}

// Every query of the dashboard, its variables at "All", runs without error against a real
// Prometheus scraping the local cluster's kruise-daemon and every kruise-controller replica with
// the labels the chart's PodMonitors add (component, node; honor_labels for the controller), and
// every query not in mayBeEmpty returns data. A CloneSet is created first, so that the
// per-workload series exist.
//
// Run by `make dashboard-check` (KRUISE_PROMETHEUS is the prometheus binary). With
// KRUISE_DASHBOARD_SCREENSHOTS=<dir> and KRUISE_CHROMIUM=<binary> it also keeps scraping for
// KRUISE_DASHBOARD_HISTORY (default 3m) and saves Prometheus's own graph page of a few of the
// dashboard's queries as PNGs in dir.
func TestDashboardQueriesAgainstPrometheus(t *testing.T) {
	bin := os.Getenv("KRUISE_PROMETHEUS")
	if bin == "" {
		t.Fatal("KRUISE_PROMETHEUS is not set: run `make dashboard-check`")
	}
	f := framework.New(t)
	ctx := framework.Context(t, 10*time.Minute)
	d, _, err := Load(repo.Path(t, Path...))
	if err != nil {
		t.Fatal(err)
	}
	createWorkload(ctx, t, f)

	node := framework.NodeName()
	var controllers []string
	for _, p := range f.LiveControllerPods(ctx, t) {
		sock, err := framework.ControllerSocket(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		controllers = append(controllers, unixSocketProxy(t, sock))
	}
	prom := startPrometheus(t, bin, []scrapeTarget{
		{job: "kruise-daemon", component: "kruise-daemon", node: node, addrs: []string{framework.DaemonHealthAddr}},
		{job: "kruise-controller", component: "kruise-controller", node: node, addrs: controllers, honorLabels: true},
	})
	waitScrapes(ctx, t, prom, 1+len(controllers), 5, 2*time.Minute)

	queries, err := d.Queries()
	if err != nil {
		t.Fatal(err)
	}
	vals := d.Values("30s", "1m")
	var report strings.Builder
	for _, q := range queries {
		expr, err := Expand(q.Expr, vals)
		if err != nil {
			t.Errorf("%s: %v", q.Where, err)
			continue
		}
		if q.Label != "" {
			got, err := prom.labelValues(ctx, expr, q.Label)
			switch {
			case err != nil:
				t.Errorf("%s: label_values(%s, %s): %v", q.Where, expr, q.Label, err)
			case len(got) == 0:
				t.Errorf("%s: label_values(%s, %s) lists nothing", q.Where, expr, q.Label)
			}
			fmt.Fprintf(&report, "%-60s %v\n", q.Where, got)
			continue
		}
		r, err := prom.query(ctx, expr, q.Instant, time.Minute, 5*time.Second)
		if err != nil {
			t.Errorf("%s: %s: %v", q.Where, expr, err)
			continue
		}
		samples := r.samples()
		note := ""
		switch {
		case len(r.Result) == 0 && mayBeEmpty[q.PanelID] != "":
			note = "empty (allowed: " + mayBeEmpty[q.PanelID] + ")"
		case len(r.Result) == 0:
			t.Errorf("%s: %s returned no series", q.Where, expr)
			note = "EMPTY"
		case allNaN(samples):
			note = "NaN only (no observations in the window)"
		}
		fmt.Fprintf(&report, "%-60s %3d series %s %s\n", q.Where, len(r.Result), last(samples), note)
	}
	t.Logf("every query, its series and last value:\n%s", report.String())

	if dir := os.Getenv("KRUISE_DASHBOARD_SCREENSHOTS"); dir != "" {
		screenshots(ctx, t, prom, d, vals, dir, 1+len(controllers))
	}
}

// createWorkload creates a one-pod CloneSet with a progress deadline; it is deleted with its
// namespace when the test ends.
func createWorkload(ctx context.Context, t *testing.T, f *framework.Framework) {
	ns := f.NewNamespace(ctx, t, "dashboard-check")
	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas:                ptr.To[int32](1),
			ProgressDeadlineSeconds: ptr.To[int32](600),
			Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name: "main", Image: f.Image("public/busybox:1.35"),
						Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
					}},
				},
			},
		},
	}
	if _, err := f.KruiseClient(t).AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CloneSet %s/web: %v", ns, err)
	}
}

// waitScrapes waits until targets targets are up and each was scraped at least n times.
func waitScrapes(ctx context.Context, t *testing.T, prom *prometheus, targets, n int, timeout time.Duration) {
	t.Helper()
	framework.WaitFor(ctx, t, timeout, fmt.Sprintf("%d targets up, each scraped %d times", targets, n), func(ctx context.Context) (bool, string, error) {
		up, err := prom.query(ctx, "up", true, 0, 0)
		if err != nil {
			return false, "", framework.Retry(err)
		}
		count, err := prom.query(ctx, "count_over_time(up[10m])", true, 0, 0)
		if err != nil {
			return false, "", framework.Retry(err)
		}
		obs := fmt.Sprintf("up %v, scrapes %v", up.samples(), count.samples())
		if len(up.Result) != targets || len(count.Result) != targets {
			return false, obs, nil
		}
		for _, v := range up.samples() {
			if v != "1" {
				return false, obs, nil
			}
		}
		for _, v := range count.samples() {
			if c, _ := strconv.Atoi(v); c < n {
				return false, obs, nil
			}
		}
		return true, obs, nil
	})
}

// screenshotPanels are the dashboard queries shown on Prometheus's graph page.
var screenshotPanels = []struct {
	panel int
	file  string
}{{501, "cpu"}, {502, "memory"}, {702, "workqueue-depth"}}

// screenshots lets Prometheus collect KRUISE_DASHBOARD_HISTORY of samples, then saves its graph
// page of each of screenshotPanels' queries (all of a panel's queries on one page).
func screenshots(ctx context.Context, t *testing.T, prom *prometheus, d *Dashboard, vals map[string]string, dir string, targets int) {
	chromium := os.Getenv("KRUISE_CHROMIUM")
	if chromium == "" {
		t.Fatal("KRUISE_DASHBOARD_SCREENSHOTS needs KRUISE_CHROMIUM, a chromium binary")
	}
	history := 3 * time.Minute
	if h := os.Getenv("KRUISE_DASHBOARD_HISTORY"); h != "" {
		var err error
		if history, err = time.ParseDuration(h); err != nil {
			t.Fatalf("KRUISE_DASHBOARD_HISTORY: %v", err)
		}
	}
	// Scrapes are 1 s apart: history/s scrapes of every target is that much history.
	waitScrapes(ctx, t, prom, targets, int(history/time.Second), history+2*time.Minute)
	queries, err := d.Queries()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range screenshotPanels {
		params := url.Values{}
		i := 0
		for _, q := range queries {
			if q.PanelID != s.panel {
				continue
			}
			expr, err := Expand(q.Expr, vals)
			if err != nil {
				t.Fatal(err)
			}
			g := fmt.Sprintf("g%d.", i)
			params.Set(g+"expr", expr)
			params.Set(g+"tab", "0")
			params.Set(g+"range_input", promDuration(history))
			params.Set(g+"step_input", "1")
			i++
		}
		out := filepath.Join(dir, "dashboard-"+s.file+".png")
		profile := t.TempDir()
		cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
			"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--hide-scrollbars", "--user-data-dir="+profile, "--window-size=1280,"+strconv.Itoa(160+740*i),
			"--virtual-time-budget=10000", "--screenshot="+out, "http://"+prom.addr+"/graph?"+params.Encode())
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("chromium: %v\n%s", err, b)
		}
		t.Logf("saved %s", out)
	}
}

// promDuration writes d the way the graph page's range field reads it: 2m, not 2m0s.
func promDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	default:
		return fmt.Sprintf("%ds", d/time.Second)
	}
}

func allNaN(samples []string) bool {
	for _, s := range samples {
		if s != "NaN" {
			return false
		}
	}
	return len(samples) > 0
}

func last(samples []string) string {
	if len(samples) == 0 {
		return "-"
	}
	return samples[len(samples)-1]
}
