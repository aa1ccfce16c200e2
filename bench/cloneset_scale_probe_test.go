//go:build bench

package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/controller"
	"github.com/nodekruise/kruise/test/proc"
)

// startHostController runs kruise-controller as a host process against the private cluster, as
// deployed (leader election on, --v=2) but with no daemon (KruiseDaemon=false: nothing runs on
// kwok's nodes), no webhooks, client rate qps (burst twice it) and the further feature gates
// gates (e.g. "SidecarTerminator=false"), and returns a probe of it once it leads.
func startHostController(t *testing.T, c *kwokCluster, dir string, qps int, gates ...string) *leaderProbe {
	t.Helper()
	bin, err := filepath.Abs(csControllerBin)
	if err != nil {
		t.Fatal(err)
	}
	cachedBinary(t, bin, "run `make build`")
	sock := filepath.Join(dir, "controller.sock")
	cmd := proc.Start(t, filepath.Join(dir, "kruise-controller.log"), bin,
		"--kubeconfig="+c.kubeconfigs[controllerUser],
		"--addr=unix://"+sock,
		"--leader-elect=true",
		"--leader-elect-resource-namespace="+controller.DefaultNamespace,
		"--feature-gates="+strings.Join(append([]string{"KruiseDaemon=false"}, gates...), ","),
		fmt.Sprintf("--kube-api-qps=%d", qps),
		fmt.Sprintf("--kube-api-burst=%d", 2*qps),
		"--logging-format=text",
		"--v=2",
	)
	p := &leaderProbe{
		pid: cmd.Process.Pid,
		http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
		}},
		apiserver: c.apiserver.Process.Pid,
		auditLog:  c.auditLog,
	}
	pollStart(t, "kruise-controller to lead", func(ctx context.Context) (bool, error) {
		if err := proc.Running(cmd); err != nil {
			return false, err
		}
		lease, err := c.kube.CoordinationV1().Leases(controller.DefaultNamespace).Get(ctx, controller.DefaultLeaseName, metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return false, nil
		}
		_, err = p.scrape(ctx)
		return err == nil, nil
	})
	return p
}

// cloneSetMetrics are the CloneSet controller's own counters of one scrape.
type cloneSetMetrics struct {
	// updated is kruise_cloneset_pods_updated_total by mode (inplace, recreate).
	updated map[string]float64
	// inPlaceSum and inPlaceCount are kruise_cloneset_inplace_update_duration_seconds'.
	inPlaceSum, inPlaceCount float64
}

func mustScrapeCloneSet(ctx context.Context, t *testing.T, p *leaderProbe) cloneSetMetrics {
	t.Helper()
	m, err := scrapeCloneSet(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func scrapeCloneSet(ctx context.Context, p *leaderProbe) (cloneSetMetrics, error) {
	m := cloneSetMetrics{updated: map[string]float64{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://controller/metrics", nil)
	if err != nil {
		return m, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return m, fmt.Errorf("scraping the controller's metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		name, labels, _ := strings.Cut(line[:i], "{")
		switch name {
		case "kruise_cloneset_pods_updated_total":
			_, mode, _ := strings.Cut(labels, `mode="`)
			mode, _, _ = strings.Cut(mode, `"`)
			m.updated[mode] = v
		case "kruise_cloneset_inplace_update_duration_seconds_sum":
			m.inPlaceSum = v
		case "kruise_cloneset_inplace_update_duration_seconds_count":
			m.inPlaceCount = v
		}
	}
	return m, sc.Err()
}
