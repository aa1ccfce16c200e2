//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/daemonlease"
	"github.com/nodekruise/kruise/test/dashboard"
	"github.com/nodekruise/kruise/test/e2e/framework"
	"github.com/nodekruise/kruise/test/repo"
)

// Every metric the Grafana dashboard's queries select is on /metrics of the running component
// the query's `component` matcher names. Series that exist only while an object does are made
// to exist, not skipped:
//   - kruise_workload_* (per workload, progress_deadline_exceeded only with
//     progressDeadlineSeconds set): a CloneSet with a progress deadline;
//   - kruise_daemon_image_pull_duration_seconds_* (a histogram by result, no series before the
//     first pull): an ImagePullJob of a fresh image;
//   - kruise_crr_waiting_on_absent_daemon{node} (only for nodes with a CRR waiting, a failure
//     state): a CRR of a pod on a node without a daemon, which waits daemonlease.Duration for
//     one before it fails with NoLiveDaemon; the controller is scraped while it waits.
//
// For the objects it makes, the test also requires their own series (by namespace and name, by
// node), not merely the metric's name. Controller-only series are emitted by the leader: every
// controller replica is scraped, and a series counts as exported when any scrape during the test
// had it.
func TestDashboardMetricsExported(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 8*time.Minute)

	d, _, err := dashboard.Load(repo.Path(t, dashboard.Path...))
	if err != nil {
		t.Fatal(err)
	}
	uses, err := d.Uses(d.Values("1m", "1h"))
	if err != nil {
		t.Fatal(err)
	}
	// component label → metric → the queries selecting it
	want := map[string]map[string][]string{"kruise-daemon": {}, "kruise-controller": {}}
	for _, u := range uses {
		comps := u.Components()
		if len(comps) == 0 {
			t.Errorf("%s: %s names no component to check it against", u.Where, u.Metric)
		}
		for _, c := range comps {
			if want[c] == nil {
				t.Errorf("%s: unknown component %q", u.Where, c)
				continue
			}
			if !slices.Contains(want[c][u.Metric], u.Where) {
				want[c][u.Metric] = append(want[c][u.Metric], u.Where)
			}
		}
	}

	ns := f.NewNamespace(ctx, t, "dashboard")
	makeWorkload(ctx, t, f, ns)
	pullFreshImage(ctx, t, f, ns)
	crr, vkNode := crrWaitingOnAbsentDaemon(ctx, t, f, ns)
	// The series of this test's own objects, so that leftovers of other tests do not pass for
	// them.
	web := map[string]string{"kind": "CloneSet", "namespace": ns, "name": "web"}
	ours := []ownSeries{
		{component: "kruise-controller", metric: "kruise_workload_replicas", labels: web},
		{component: "kruise-controller", metric: "kruise_workload_paused", labels: web},
		{component: "kruise-controller", metric: "kruise_workload_partition", labels: web},
		{component: "kruise-controller", metric: "kruise_workload_progress_deadline_exceeded", labels: web},
		{component: "kruise-controller", metric: "kruise_crr_waiting_on_absent_daemon", labels: map[string]string{"node": vkNode}},
	}

	seen := map[string]map[string]bool{"kruise-daemon": {}, "kruise-controller": {}}
	record := func(component, body string) {
		for name := range framework.SampleNames(body) {
			seen[component][name] = true
		}
		for i := range ours {
			if ours[i].component == component && framework.HasSeries(body, ours[i].metric, ours[i].labels) {
				ours[i].seen = true
			}
		}
	}
	missing := func() []string {
		var out []string
		for comp, metrics := range want {
			for m := range metrics {
				if !seen[comp][m] {
					out = append(out, comp+" "+m)
				}
			}
		}
		for _, o := range ours {
			if !o.seen {
				out = append(out, fmt.Sprintf("%s %s%v", o.component, o.metric, o.labels))
			}
		}
		slices.Sort(out)
		return out
	}
	// Long enough for the CRR's whole wait, and a scrape after it.
	_, err = framework.Poll(ctx, daemonlease.Duration+30*time.Second, func(ctx context.Context) (bool, string, error) {
		body, err := framework.DaemonMetrics(ctx)
		if err != nil {
			return false, "", framework.Retry(err)
		}
		record("kruise-daemon", body)
		for _, p := range f.LiveControllerPods(ctx, t) {
			body, err := framework.ControllerMetrics(ctx, p.Name)
			if err != nil {
				return false, "", framework.Retry(err)
			}
			record("kruise-controller", body)
		}
		got, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Get(ctx, crr, metav1.GetOptions{})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		left := missing()
		return len(left) == 0, fmt.Sprintf("CRR %s phase %q; not exported yet: %s", crr, got.Status.Phase, strings.Join(left, ", ")), nil
	})
	if err == nil {
		return
	}
	for _, m := range missing() {
		comp, metric, _ := strings.Cut(m, " ")
		if wheres := want[comp][metric]; len(wheres) > 0 {
			t.Errorf("%s does not export %s, which the dashboard's %s select", comp, metric, strings.Join(wheres, "; "))
		} else {
			t.Errorf("%s has no series %s of this test's objects", comp, metric)
		}
	}
	t.Logf("last observation: %v", err)
}

// ownSeries is a series the test's own objects must make a component export.
type ownSeries struct {
	component, metric string
	labels            map[string]string
	seen              bool
}

// makeWorkload creates a CloneSet with a progress deadline, for the per-workload series, and
// waits until it is available.
func makeWorkload(ctx context.Context, t *testing.T, f *framework.Framework, ns string) {
	t.Helper()
	kc := f.KruiseClient(t)
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
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CloneSet web: %v", err)
	}
	waitCloneSet(ctx, t, kc, ns, "web", 1)
}

// pullFreshImage pulls an image no node has yet through an ImagePullJob, for the pull duration
// histogram's first series.
func pullFreshImage(ctx context.Context, t *testing.T, f *framework.Framework, ns string) {
	t.Helper()
	kc := f.KruiseClient(t)
	image := f.UniqueImage("public/")
	framework.PushImage(t, image, nil)
	framework.CreateImagePullJob(ctx, t, kc, framework.NewImagePullJob(ns, "dashboard", image))
	job := framework.WaitImagePullJobFinished(ctx, t, kc, ns, "dashboard", 2*time.Minute)
	if job.Status.Succeeded != 1 {
		t.Fatalf("ImagePullJob of %s: %s", image, framework.DescribeImagePullJob(ctx, kc, job))
	}
}

// crrWaitingOnAbsentDaemon creates a CRR of a running pod on a node with no kruise-daemon (a
// virtual-kubelet node; the test reports the pod Running, as its provider would) and returns the
// CRR's name and the node's. The controller admits it and waits daemonlease.Duration for a
// daemon.
func crrWaitingOnAbsentDaemon(ctx context.Context, t *testing.T, f *framework.Framework, ns string) (crr, node string) {
	t.Helper()
	node = f.CreateVirtualKubeletNode(ctx, t)
	pod := f.BusyboxPod(ns, "on-vk-node", "main")
	pod.Spec.NodeName = node
	pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	created, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	f.DeletePodNow(t, ns, pod.Name)
	started := metav1.NewTime(time.Now().Add(-time.Second))
	created.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: &started,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "main", Image: created.Spec.Containers[0].Image, ContainerID: "vk://" + ns + "/main", Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		}},
	}
	if _, err := f.Client.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("reporting pod %s Running as its provider would: %v", pod.Name, err)
	}
	req := crrFor(ns, "no-daemon", pod.Name, "main")
	if _, err := f.KruiseClient(t).AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, req, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRR %s: %v", req.Name, err)
	}
	return req.Name, node
}
