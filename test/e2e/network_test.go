//go:build e2e

package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The network-safety rules of the local cluster, seen from the host and from inside a real pod:
// the kubernetes service IP is unreachable rather than routed anywhere, and pods have no route
// off their bridge.
func TestNetworkSafety(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 2*time.Minute)

	out, _ := exec.CommandContext(ctx, "ip", "route", "get", "10.0.0.1").CombinedOutput()
	if got := string(out); !strings.Contains(got, "unreachable") && !strings.Contains(got, "No route") {
		t.Errorf("host: the service IP 10.0.0.1 is routable: %q", got)
	}
	fwd, err := exec.CommandContext(ctx, "cat", "/proc/sys/net/ipv4/ip_forward").Output()
	if err != nil || strings.TrimSpace(string(fwd)) != "0" {
		t.Errorf("host: ip_forward is %q (%v), want 0", fwd, err)
	}

	ns := f.NewNamespace(ctx, t, "network")
	// Print the pod's routes, then try the service IP and the host's default gateway; the job
	// succeeds only if neither is reachable.
	script := `ip route; ` +
		`if nc -w 2 10.0.0.1 443 </dev/null; then echo REACHED-SERVICE; exit 1; fi; ` +
		`if ip route | grep -q '^default'; then echo HAS-DEFAULT-ROUTE; exit 1; fi; echo ISOLATED`
	job := framework.BusyboxJob(ns, "probe", f.Image("public/busybox:1.35"), script)
	if _, err := f.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.WaitJobComplete(ctx, t, ns, job.Name, time.Minute)
	pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=probe"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("listing the probe pod: %v", err)
	}
	logs, err := f.PodLogs(ctx, ns, pods.Items[0].Name, "main")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, "ISOLATED") || !strings.Contains(logs, "10.244.0.0/24") {
		t.Fatalf("pod network is not the isolated bridge:\n%s", logs)
	}
}
