//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The enhanced liveness probe (gate EnhancedLivenessProbe, on in deploy/overlays/local;
// docs/enhancedliveness.md). Wire names as written in the docs, not the Go constants, so that a
// renamed constant shows here.
const (
	livenessCRRLabel     = "apps.kruise.io/enhanced-liveness=true"
	livenessSharedReason = "EnhancedLivenessSharedOutage"
	// livenessTimeout bounds a failure reaching a restart: a probe period or two, the daemon's
	// status write, the controller's CRR, the daemon stopping the container and the kubelet
	// starting it again, with room for a loaded machine.
	livenessTimeout = 90 * time.Second
)

// livenessStates is each pod's (by UID) state of its probe EnhancedLiveness#main in the
// NodePodProbe of its node: "" when listed without a result yet, absent when not listed.
func livenessStates(ctx context.Context, kc versioned.Interface, pods []corev1.Pod) (map[string]appsv1alpha1.ContainerProbeState, string, error) {
	name := nodeprobe.LivenessProbeName("main")
	out := map[string]appsv1alpha1.ContainerProbeState{}
	var desc []string
	nodes := map[string]*appsv1alpha1.NodePodProbe{}
	for _, p := range pods {
		npp, ok := nodes[p.Spec.NodeName]
		if !ok {
			got, err := kc.AppsV1alpha1().NodePodProbes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				got = nil
			} else if err != nil {
				return nil, "", err
			}
			nodes[p.Spec.NodeName], npp = got, got
		}
		if npp == nil {
			desc = append(desc, p.Name+": no NodePodProbe")
			continue
		}
		listed := false
		for _, pp := range npp.Spec.PodProbes {
			for _, probe := range pp.Probes {
				listed = listed || pp.UID == string(p.UID) && probe.Name == name
			}
		}
		if !listed {
			desc = append(desc, p.Name+": not listed")
			continue
		}
		st := appsv1alpha1.ContainerProbeState{Name: name}
		for _, ps := range npp.Status.PodProbeStatuses {
			for _, s := range ps.ProbeStates {
				if ps.UID == string(p.UID) && s.Name == name {
					st = s
				}
			}
		}
		out[string(p.UID)] = st
		desc = append(desc, fmt.Sprintf("%s: %q since %s", p.Name, st.State, st.LastTransitionTime.Format(time.RFC3339)))
	}
	sort.Strings(desc)
	return out, strings.Join(desc, "; "), nil
}

// waitLiveness waits until every pod's enhanced liveness probe is in state want, reported no
// earlier than since (the zero time: any).
func waitLiveness(ctx context.Context, t *testing.T, kc versioned.Interface, pods []corev1.Pod, want appsv1alpha1.ProbeState, since time.Time) {
	t.Helper()
	framework.WaitFor(ctx, t, livenessTimeout, fmt.Sprintf("%s %s for %d pods", nodeprobe.LivenessProbeName("main"), want, len(pods)),
		func(ctx context.Context) (bool, string, error) {
			states, desc, err := livenessStates(ctx, kc, pods)
			if err != nil {
				return false, "", err
			}
			for _, p := range pods {
				st, ok := states[string(p.UID)]
				if !ok || st.State != want || st.LastProbeTime.Time.Before(since) {
					return false, desc, nil
				}
			}
			return true, desc, nil
		})
}

// livenessCRRs lists the enhanced liveness requests in ns.
func livenessCRRs(ctx context.Context, t *testing.T, kc versioned.Interface, ns string) []appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	list, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).List(ctx, metav1.ListOptions{LabelSelector: livenessCRRLabel})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// mainRestartCounts is each pod's restart count of container main, by pod name.
func mainRestartCounts(ctx context.Context, t *testing.T, f *framework.Framework, ns, app string) map[string]int32 {
	t.Helper()
	out := map[string]int32{}
	for _, p := range clonePods(ctx, t, f, ns, app) {
		if s := framework.ContainerStatusOf(&p, "main"); s != nil {
			out[p.Name] = s.RestartCount
		}
	}
	return out
}

// requireHandedOver checks the webhook moved the pod's liveness probe into the probe context.
func requireHandedOver(t *testing.T, p corev1.Pod) {
	t.Helper()
	for _, c := range p.Spec.Containers {
		if c.LivenessProbe != nil {
			t.Errorf("pod %s container %s kept its livenessProbe", p.Name, c.Name)
		}
	}
	ctxs, err := nodeprobe.ReadProbeContext(p.Annotations, appsv1alpha1.ContainerProbeContextAnnotation)
	if err != nil || len(ctxs) != 1 || ctxs[0].Name != "main" || ctxs[0].LivenessProbe == nil || ctxs[0].LivenessProbe.Exec == nil {
		t.Fatalf("pod %s: probe context %+v (%v); want main's exec probe", p.Name, ctxs, err)
	}
}

func podList(pods map[string]corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// docs/examples/enhancedliveness.yaml as written: the pods have no livenessProbe, the probe is in
// their probe context and their node's NodePodProbe; removing /tmp/healthy in one pod gets that
// pod a ContainerRecreateRequest labelled enhanced-liveness, its container is recreated (which
// creates the file again) and its probe is Succeeded again; the other pods are not restarted.
func TestEnhancedLivenessRestart(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "liveness-restart")
	const app = "web-liveness"
	for _, obj := range exampleObjects(t, "../../docs/examples/enhancedliveness.yaml") {
		if cs, ok := obj.(*appsv1alpha1.CloneSet); ok {
			cs.Namespace = ns
			createCloneSet(ctx, t, kc, cs)
		}
	}
	pods := podList(waitPodsSettled(ctx, t, f, kc, ns, app, 4))
	for _, p := range pods {
		requireHandedOver(t, p)
	}
	waitLiveness(ctx, t, kc, pods, appsv1alpha1.ProbeSucceeded, time.Time{})
	before := mainRestartCounts(ctx, t, f, ns, app)

	victim := pods[0]
	kubectlExec(ctx, t, ns, victim.Name, "rm", "/tmp/healthy")
	var crr appsv1alpha1.ContainerRecreateRequest
	framework.WaitFor(ctx, t, livenessTimeout, "a liveness CRR for "+victim.Name, func(ctx context.Context) (bool, string, error) {
		crrs := livenessCRRs(ctx, t, kc, ns)
		var desc []string
		for _, c := range crrs {
			desc = append(desc, c.Name+" for "+c.Spec.PodName)
			if c.Spec.PodName == victim.Name {
				crr = c
				return true, "", nil
			}
		}
		return false, strings.Join(desc, ", "), nil
	})
	if len(crr.Spec.Containers) != 1 || crr.Spec.Containers[0].Name != "main" {
		t.Errorf("CRR %s recreates %+v; want main", crr.Name, crr.Spec.Containers)
	}
	restarted := f.WaitContainerRestarted(ctx, t, ns, victim.Name, "main", framework.ContainerStatusOf(&victim, "main").ContainerID, livenessTimeout)
	started := framework.ContainerStatusOf(restarted, "main").State.Running.StartedAt.Time.Truncate(time.Second)
	waitLiveness(ctx, t, kc, []corev1.Pod{victim}, appsv1alpha1.ProbeSucceeded, started)

	after := mainRestartCounts(ctx, t, f, ns, app)
	for _, p := range pods[1:] {
		if after[p.Name] != before[p.Name] {
			t.Errorf("pod %s restarted (%d -> %d); only %s failed", p.Name, before[p.Name], after[p.Name], victim.Name)
		}
	}
	for _, c := range livenessCRRs(ctx, t, kc, ns) {
		if c.Spec.PodName != victim.Name {
			t.Errorf("CRR %s for pod %s, which did not fail", c.Name, c.Spec.PodName)
		}
	}
}

// A shared outage: 3 of 4 pods failing restarts none of them, and the CloneSet gets the Warning
// Event EnhancedLivenessSharedOutage. So that the three failures are seen together however the
// probes' periods fall, the budget is spent first: maxUnavailable 1 and the fourth pod not Ready
// (its readiness file removed), so a pod failing alone is held for the budget until the third
// fails and the outage holds them all. The Event tells that the controller decided with all three
// failed, so no CRR by then means none was created; restoring the files brings the probes back.
func TestEnhancedLivenessSharedOutage(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "liveness-outage")
	const app = "liveness-outage"
	exec := func(file string) *corev1.Probe {
		return &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1,
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", file}}}}
	}
	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}, Annotations: map[string]string{
					appsv1alpha1.UsingEnhancedLivenessAnnotation:       "true",
					"apps.kruise.io/enhanced-liveness-max-unavailable": "1",
				}},
				// The files exist before main starts (an init container makes them), so the
				// first probe, which may run as main starts, cannot fail and restart it.
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Volumes:                       []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
					InitContainers: []corev1.Container{{
						Name: "files", Image: f.Image("public/busybox:1.35"),
						Command:      []string{"touch", "/state/alive", "/state/ready"},
						VolumeMounts: []corev1.VolumeMount{{Name: "state", MountPath: "/state"}},
					}},
					Containers: []corev1.Container{{
						Name: "main", Image: f.Image("public/busybox:1.35"),
						Command:        []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
						VolumeMounts:   []corev1.VolumeMount{{Name: "state", MountPath: "/state"}},
						LivenessProbe:  exec("/state/alive"),
						ReadinessProbe: exec("/state/ready"),
					}},
				},
			},
		},
	}
	createCloneSet(ctx, t, kc, cs)
	pods := podList(waitPodsSettled(ctx, t, f, kc, ns, app, 4))
	for _, p := range pods {
		requireHandedOver(t, p)
	}
	waitLiveness(ctx, t, kc, pods, appsv1alpha1.ProbeSucceeded, time.Time{})

	spare, failing := pods[3], pods[:3]
	kubectlExec(ctx, t, ns, spare.Name, "rm", "/state/ready")
	f.WaitPod(ctx, t, ns, spare.Name, livenessTimeout, "not Ready", func(p *corev1.Pod) (bool, error) { return !framework.PodReady(p), nil })
	// The controller decides from its own cache of pods, which may lag the API server on a busy
	// node: the CloneSet's status, written by the same process from the same cache, counting 3
	// ready pods says the spent budget is seen before any pod fails.
	framework.WaitFor(ctx, t, livenessTimeout, "CloneSet "+app+" counting the spare pod not ready", func(ctx context.Context) (bool, string, error) {
		cs, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, app, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return cs.Status.ReadyReplicas == 3, fmt.Sprintf("status %+v", cs.Status), nil
	})
	for _, p := range failing {
		kubectlExec(ctx, t, ns, p.Name, "rm", "/state/alive")
	}
	waitLiveness(ctx, t, kc, failing, appsv1alpha1.ProbeFailed, time.Time{})
	f.WaitObjectEvent(ctx, t, ns, "CloneSet", app, livenessSharedReason, livenessTimeout)
	if crrs := livenessCRRs(ctx, t, kc, ns); len(crrs) != 0 {
		t.Fatalf("%d liveness CRRs during a shared outage: %+v", len(crrs), crrs)
	}

	restored := time.Now().Truncate(time.Second)
	for _, p := range failing {
		kubectlExec(ctx, t, ns, p.Name, "touch", "/state/alive")
	}
	waitLiveness(ctx, t, kc, failing, appsv1alpha1.ProbeSucceeded, restored)
	kubectlExec(ctx, t, ns, spare.Name, "touch", "/state/ready")
	waitCloneSet(ctx, t, kc, ns, app, 4)
	if crrs := livenessCRRs(ctx, t, kc, ns); len(crrs) != 0 {
		t.Errorf("%d liveness CRRs after the outage: %+v", len(crrs), crrs)
	}
	for name, n := range mainRestartCounts(ctx, t, f, ns, app) {
		if n != 0 {
			t.Errorf("pod %s restarted %d times; the outage restarts none", name, n)
		}
	}
}

// The budget: the example's CloneSet scaled to 5 (maxUnavailable 1), /tmp/healthy removed in 2
// pods (2 of 5 is no shared outage): both are restarted, one at a time: the second request is
// created no earlier than the first one completed (second resolution, as the API keeps times).
// Should the first restart finish before the second file is removed, the order holds all the
// more.
func TestEnhancedLivenessBudget(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "liveness-budget")
	const app = "web-liveness"
	for _, obj := range exampleObjects(t, "../../docs/examples/enhancedliveness.yaml") {
		if cs, ok := obj.(*appsv1alpha1.CloneSet); ok {
			cs.Namespace = ns
			cs.Spec.Replicas = ptr.To[int32](5)
			createCloneSet(ctx, t, kc, cs)
		}
	}
	pods := podList(waitPodsSettled(ctx, t, f, kc, ns, app, 5))
	waitLiveness(ctx, t, kc, pods, appsv1alpha1.ProbeSucceeded, time.Time{})
	failing := pods[:2]
	for _, p := range failing {
		kubectlExec(ctx, t, ns, p.Name, "rm", "/tmp/healthy")
	}
	var crrs []appsv1alpha1.ContainerRecreateRequest
	framework.WaitFor(ctx, t, 2*livenessTimeout, "both failing pods' CRRs completed", func(ctx context.Context) (bool, string, error) {
		crrs = livenessCRRs(ctx, t, kc, ns)
		var desc []string
		done := 0
		for _, c := range crrs {
			desc = append(desc, fmt.Sprintf("%s for %s: %s", c.Name, c.Spec.PodName, c.Status.Phase))
			if c.Status.CompletionTime != nil {
				done++
			}
		}
		return len(crrs) == 2 && done == 2, strings.Join(desc, ", "), nil
	})
	sort.Slice(crrs, func(i, j int) bool { return crrs[i].Status.CompletionTime.Before(crrs[j].Status.CompletionTime) })
	if crrs[0].Spec.PodName == crrs[1].Spec.PodName {
		t.Fatalf("two CRRs for pod %s; want one for each failing pod", crrs[0].Spec.PodName)
	}
	first, second := crrs[0], crrs[1]
	if second.CreationTimestamp.Time.Before(first.Status.CompletionTime.Time) {
		t.Errorf("CRR %s created at %s, before %s completed at %s: two restarts at once with maxUnavailable 1",
			second.Name, second.CreationTimestamp.Format(time.RFC3339), first.Name, first.Status.CompletionTime.Format(time.RFC3339))
	}
	for _, c := range crrs {
		if c.Spec.PodName != failing[0].Name && c.Spec.PodName != failing[1].Name {
			t.Errorf("CRR %s for pod %s, which did not fail", c.Name, c.Spec.PodName)
		}
	}
	waitLiveness(ctx, t, kc, failing, appsv1alpha1.ProbeSucceeded, first.CreationTimestamp.Time)
}
