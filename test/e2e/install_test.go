//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// Both components, deployed from deploy/overlays/local, are rolled out and Ready.
func TestKruiseComponentsReady(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 3*time.Minute)

	framework.WaitFor(ctx, t, 2*time.Minute, "kruise-daemon rolled out and ready", func(ctx context.Context) (bool, string, error) {
		ds, err := f.Client.AppsV1().DaemonSets(framework.KruiseNamespace).Get(ctx, "kruise-daemon", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := ds.Status
		obs := fmt.Sprintf("desired=%d updated=%d ready=%d generation=%d/%d", s.DesiredNumberScheduled,
			s.UpdatedNumberScheduled, s.NumberReady, s.ObservedGeneration, ds.Generation)
		return s.DesiredNumberScheduled > 0 && s.ObservedGeneration == ds.Generation &&
			s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberReady == s.DesiredNumberScheduled, obs, nil
	})
	framework.WaitFor(ctx, t, 2*time.Minute, "kruise-controller available", func(ctx context.Context) (bool, string, error) {
		d, err := f.Client.AppsV1().Deployments(framework.KruiseNamespace).Get(ctx, "kruise-controller", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := d.Status
		want := *d.Spec.Replicas
		return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == want && s.ReadyReplicas == want,
			fmt.Sprintf("updated=%d ready=%d want=%d", s.UpdatedReplicas, s.ReadyReplicas, want), nil
	})
	pods, err := f.Client.CoreV1().Pods(framework.KruiseNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if !framework.PodReady(&p) {
			t.Errorf("pod %s is not Ready: %s", p.Name, f.DescribePods(ctx, framework.KruiseNamespace, "app.kubernetes.io/name="+p.Labels["app.kubernetes.io/name"]))
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount > 0 {
				t.Errorf("container %s/%s restarted %d times", p.Name, cs.Name, cs.RestartCount)
			}
		}
	}
}

// The daemon found the node's container runtime and says which one it is.
func TestDaemonReportsRuntime(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 2*time.Minute)

	var logs string
	framework.WaitFor(ctx, t, time.Minute, "the daemon to log the runtime it connected to", func(ctx context.Context) (bool, string, error) {
		pods, err := f.Client.CoreV1().Pods(framework.KruiseNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=kruise-daemon"})
		if err != nil {
			return false, "", err
		}
		for _, p := range pods.Items {
			if !framework.PodReady(&p) {
				continue
			}
			logs, err = f.PodLogs(ctx, framework.KruiseNamespace, p.Name, "daemon")
			if err != nil {
				return false, "", framework.Retry(err)
			}
			if strings.Contains(logs, "Connected to container runtime") {
				return true, "", nil
			}
		}
		return false, "no Ready daemon pod has logged it yet", nil
	})
	for _, want := range []string{`runtime="containerd"`, `version="`} {
		if !strings.Contains(logs, want) {
			t.Errorf("daemon log lacks %s:\n%s", want, logs)
		}
	}

	// The daemon runs on the host network of this node and binds to loopback (local overlay).
	metrics := httpGet(ctx, t, "http://127.0.0.1:10223/metrics")
	for _, want := range []string{
		`kruise_daemon_runtime_info{runtime="containerd"`,
		`kruise_daemon_cri_up 1`,
		`kruise_daemon_cri_request_duration_seconds_count{method="Version"}`,
		// Series that exist from the start, for rates and alerts (issue 23): every pull failure
		// class, and every reason of each credential provider the local config names.
		`kruise_daemon_image_pull_failures_total{reason="auth"} `,
		`kruise_daemon_image_pull_failures_total{reason="not_found"} `,
		`kruise_daemon_image_pull_failures_total{reason="timeout"} `,
		`kruise_daemon_image_pull_failures_total{reason="invalid"} `,
		`kruise_daemon_image_pull_failures_total{reason="other"} `,
		`kruise_daemon_credential_provider_errors_total{provider="basic-credential-provider",reason="exec"} `,
		`kruise_daemon_credential_provider_errors_total{provider="basic-credential-provider",reason="invalid_response"} `,
		`kruise_daemon_credential_provider_errors_total{provider="basic-credential-provider",reason="timeout"} `,
		`kruise_daemon_credential_provider_errors_total{provider="token-credential-provider",reason="exec"} `,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("daemon /metrics lacks %s", want)
		}
	}
}

// Every controller replica, leader or standby, exports the CRR completion counters from zero and
// the expiry of the webhook certificate it serves; only the leader exports the gauges read from
// its caches (CRRs waiting on an absent daemon, the workloads).
func TestControllerMetrics(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 2*time.Minute)

	pods, err := f.ControllerPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leaders := 0
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !framework.PodReady(&p) {
			continue
		}
		metrics, err := framework.ControllerMetrics(ctx, p.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, reason := range []string{"Succeeded", "Failed", "DeadlineExceeded", "NoLiveDaemon", "PodGone", "PodReplaced", "InvalidRequest"} {
			if want := `kruise_crr_completed_total{reason="` + reason + `"} `; !strings.Contains(metrics, want) {
				t.Errorf("controller %s /metrics lacks %s", p.Name, want)
			}
		}
		expiry := regexp.MustCompile(`(?m)^kruise_webhook_certificate_expiry_timestamp_seconds ([0-9.e+]+)$`).FindStringSubmatch(metrics)
		if expiry == nil {
			t.Errorf("controller %s /metrics lacks kruise_webhook_certificate_expiry_timestamp_seconds", p.Name)
		} else if at, err := strconv.ParseFloat(expiry[1], 64); err != nil || time.Unix(int64(at), 0).Before(time.Now()) {
			t.Errorf("controller %s: certificate expiry %s is not a time in the future", p.Name, expiry[1])
		}
		if strings.Contains(metrics, `leader_election_master_status{name="kruise-controller"} 1`) {
			leaders++
			continue
		}
		if m := regexp.MustCompile(`(?m)^(kruise_workload_|kruise_crr_waiting_on_absent_daemon).*$`).FindString(metrics); m != "" {
			t.Errorf("standby %s exports a leader's series: %s", p.Name, m)
		}
	}
	if leaders != 1 {
		t.Errorf("%d controller replicas say they lead, want 1", leaders)
	}
}

// Both components' images are stamped by hack/tools/buildinfo with the commit they were built from
// and that commit's date: their start-up line says so, rather than commit "unknown" built
// 1970-01-01.
func TestComponentsStampedWithTheirCommit(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 2*time.Minute)
	commit := regexp.MustCompile(`^[0-9a-f]{40}(-dirty)?$`)

	for _, c := range []struct{ name, container string }{{"kruise-controller", "controller"}, {"kruise-daemon", "daemon"}} {
		var starting string
		framework.WaitFor(ctx, t, time.Minute, c.name+" to have logged its start-up line", func(ctx context.Context) (bool, string, error) {
			pods, err := f.Client.CoreV1().Pods(framework.KruiseNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + c.name})
			if err != nil {
				return false, "", err
			}
			for _, p := range pods.Items {
				if !framework.PodReady(&p) {
					continue
				}
				logs, err := f.PodLogs(ctx, framework.KruiseNamespace, p.Name, c.container)
				if err != nil {
					return false, "", framework.Retry(err)
				}
				for _, line := range strings.Split(logs, "\n") {
					if e, ok := framework.ParseLogEntry(line); ok && e.Msg == "Starting" {
						starting = line
						return true, "", nil
					}
				}
			}
			return false, "no Ready pod has a Starting line in its log", nil
		})
		if got := framework.LogValue(starting, "commit"); !commit.MatchString(got) {
			t.Errorf("%s: commit %q, want the 40-hex commit it was built from: %s", c.name, got, starting)
		}
		date := framework.LogValue(starting, "buildDate")
		if at, err := time.Parse(time.RFC3339, date); err != nil || at.Year() < 2000 {
			t.Errorf("%s: buildDate %q, want the date of the commit it was built from: %s", c.name, date, starting)
		}
	}
}

func httpGet(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d, %v", url, resp.StatusCode, err)
	}
	return string(body)
}

// The CRDs from deploy/ are established, serving the versions OpenKruise serves.
func TestCRDsEstablished(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, time.Minute)
	client, err := apiextensionsclient.NewForConfig(f.Config)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"containerrecreaterequests.apps.kruise.io": {"v1alpha1"},
		"imagepulljobs.apps.kruise.io":             {"v1alpha1", "v1beta1"},
		"imagelistpulljobs.apps.kruise.io":         {"v1alpha1", "v1beta1"},
		"nodeimages.apps.kruise.io":                {"v1alpha1", "v1beta1"},
		"clonesets.apps.kruise.io":                 {"v1alpha1", "v1beta1"},
		"daemonsets.apps.kruise.io":                {"v1alpha1", "v1beta1"},
		"statefulsets.apps.kruise.io":              {"v1alpha1", "v1beta1"},
		"sidecarsets.apps.kruise.io":               {"v1alpha1", "v1beta1"},
		"workloadspreads.apps.kruise.io":           {"v1alpha1"},
		"broadcastjobs.apps.kruise.io":             {"v1alpha1", "v1beta1"},
		"advancedcronjobs.apps.kruise.io":          {"v1alpha1", "v1beta1"},
		"ephemeraljobs.apps.kruise.io":             {"v1alpha1"},
		"podprobemarkers.apps.kruise.io":           {"v1alpha1"},
		"nodepodprobes.apps.kruise.io":             {"v1alpha1"},
		"uniteddeployments.apps.kruise.io":         {"v1alpha1"},
		"persistentpodstates.apps.kruise.io":       {"v1alpha1"},
		"resourcedistributions.apps.kruise.io":     {"v1alpha1"},
	}
	for name, versions := range want {
		crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("CRD %s: %v", name, err)
			continue
		}
		established := false
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				established = true
			}
		}
		if !established {
			t.Errorf("CRD %s is not Established", name)
		}
		served := map[string]bool{}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served[v.Name] = true
			}
		}
		for _, v := range versions {
			if !served[v] {
				t.Errorf("CRD %s does not serve %s (serves %v)", name, v, served)
			}
		}
	}
}
