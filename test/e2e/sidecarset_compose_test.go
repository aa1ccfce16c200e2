//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// SidecarSets with the other features a pod can meet: the Job sidecar terminator and a CloneSet's
// in-place update.

const composeTimeout = 3 * time.Minute

// composeSidecarSet creates a SidecarSet, named after namespace ns (SidecarSets are
// cluster-scoped), that injects c into the pods of ns labelled sidecarset=<ns>, and deletes it
// when the test ends. It returns once the pod webhook injects it (a dry-run pod shows c).
func composeSidecarSet(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, ns string, c corev1.Container) *appsv1beta1.SidecarSet {
	t.Helper()
	ss := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"sidecarset": ns}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			Containers:        []appsv1beta1.SidecarContainer{{Container: c}},
			UpdateStrategy: appsv1beta1.SidecarSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			},
		},
	}
	created, err := kc.AppsV1beta1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating SidecarSet %s: %v", ss.Name, err)
	}
	t.Cleanup(func() {
		if err := kc.AppsV1beta1().SidecarSets().Delete(context.Background(), ss.Name, metav1.DeleteOptions{}); err != nil {
			t.Logf("deleting SidecarSet %s: %v", ss.Name, err)
		}
	})
	waitInjects(ctx, t, f, ns, ss.Spec.Selector.MatchLabels, c.Name)
	return created
}

// waitInjects waits until a pod of namespace ns labelled podLabels is created with container
// (a dry run, several in a row: each may reach another kruise-controller replica, whose caches
// must have the SidecarSet too). A SidecarSet injects only once the pod webhook's scope names it
// and every replica's caches hold it, a moment after it is created.
func waitInjects(ctx context.Context, t *testing.T, f *framework.Framework, ns string, podLabels map[string]string, container string) {
	t.Helper()
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns, Labels: podLabels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: f.Image("public/busybox:1.35"), Command: []string{"true"},
		}}},
	}
	const inARow = 4
	injected := 0
	framework.WaitFor(ctx, t, time.Minute, fmt.Sprintf("%d dry-run pods in a row injected with %s", inARow, container), func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, "", err
		}
		if framework.ContainerSpecOf(p, container) == nil && framework.InitContainerSpecOf(p, container) == nil {
			injected = 0
			return false, fmt.Sprintf("dry-run pod's containers: %d", len(p.Spec.Containers)), nil
		}
		injected++
		return injected >= inARow, fmt.Sprintf("%d in a row", injected), nil
	})
}

// A Job's pod that got a sidecar from a SidecarSet still completes: the injected sidecar carries
// KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT, so the Job sidecar terminator stops it once the Job's
// own container is done.
func TestSidecarSetJobCompletes(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 2*composeTimeout)
	ns := f.NewNamespace(ctx, t, "ss-job")
	composeSidecarSet(ctx, t, f, kc, ns, corev1.Container{
		Name: "log-agent", Image: f.Image("public/busybox:1.35"),
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
		Env:     []corev1.EnvVar{{Name: "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", Value: "true"}},
	})
	job := framework.SidecarJob(ns, "batch", corev1.RestartPolicyNever, corev1.Container{
		Name: "main", Image: f.Image("public/busybox:1.35"), Command: []string{"sh", "-c", "sleep 2"},
	})
	job.Spec.Template.Labels = map[string]string{"sidecarset": ns}
	if _, err := f.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Job: %v", err)
	}
	framework.WaitFor(ctx, t, composeTimeout, "the Job to complete", func(ctx context.Context) (bool, string, error) {
		j, err := f.Client.BatchV1().Jobs(ns).Get(ctx, "batch", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, c := range j.Status.Conditions {
			if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
				return true, string(c.Type), nil
			}
		}
		return false, fmt.Sprintf("active %d succeeded %d failed %d; pods: %s", j.Status.Active, j.Status.Succeeded, j.Status.Failed,
			f.DescribeSidecarPods(ctx, ns, "job-name=batch")), nil
	})
	j, err := f.Client.BatchV1().Jobs(ns).Get(ctx, "batch", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading Job: %v", err)
	}
	if j.Status.Succeeded != 1 {
		t.Fatalf("Job ended with %d succeeded, %d failed; want it complete: pods %s", j.Status.Succeeded, j.Status.Failed,
			f.DescribeSidecarPods(ctx, ns, "job-name=batch"))
	}
	pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=batch"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("listing the Job's pods: %d, %v", len(pods.Items), err)
	}
	p := &pods.Items[0]
	if framework.ContainerSpecOf(p, "log-agent") == nil {
		t.Fatalf("the Job's pod has no injected log-agent: %s", framework.DescribeSidecarPod(p))
	}
	// The pod's phase is recorded once its main container is done; the kubelet stops the
	// sidecar after that.
	f.WaitPod(ctx, t, ns, p.Name, sidecarStopTimeout, "the injected sidecar stopped", func(p *corev1.Pod) (bool, error) {
		st := framework.ContainerStatusOf(p, "log-agent")
		return st != nil && st.State.Terminated != nil, nil
	})
}

// A CloneSet's in-place update of its own container and a SidecarSet's in-place upgrade of the
// sidecar it injected, started together on the same pods, both land (OpenKruise #1683: one could
// undo the other), each container restarted exactly once, the pods kept.
func TestSidecarSetWithCloneSetInPlace(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 3*composeTimeout)
	ns := f.NewNamespace(ctx, t, "ss-clone")
	loop := []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}
	composeSidecarSet(ctx, t, f, kc, ns, corev1.Container{Name: "agent", Image: f.Image("public/busybox:1.35"), Command: loop})
	appImage, agentImage := f.BusyboxVariant(t), f.BusyboxVariant(t)

	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "sidecarset": ns}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers:                    []corev1.Container{{Name: "main", Image: f.Image("public/busybox:1.35"), Command: loop}},
				},
			},
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{
				Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(2)),
			},
		},
	}
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CloneSet: %v", err)
	}
	waitCloneSet(ctx, t, kc, ns, "web", 2)
	before := map[string]corev1.Pod{}
	for _, p := range clonePods(ctx, t, f, ns, "web") {
		if framework.ContainerSpecOf(&p, "agent") == nil {
			t.Fatalf("pod %s has no injected agent: %s", p.Name, framework.DescribeSidecarPod(&p))
		}
		before[p.Name] = p
	}

	appPatch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, appImage)
	agentPatch := fmt.Sprintf(`[{"op":"replace","path":"/spec/containers/0/image","value":%q}]`, agentImage)
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Patch(ctx, "web", types.JSONPatchType, []byte(appPatch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the CloneSet's image: %v", err)
	}
	if _, err := kc.AppsV1beta1().SidecarSets().Patch(ctx, ns, types.JSONPatchType, []byte(agentPatch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the SidecarSet's image: %v", err)
	}
	waitCloneSet(ctx, t, kc, ns, "web", 2)
	framework.WaitFor(ctx, t, composeTimeout, "SidecarSet "+ns+" with 2 pods updated and ready", func(ctx context.Context) (bool, string, error) {
		ss, err := kc.AppsV1beta1().SidecarSets().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := ss.Status
		return s.ObservedGeneration == ss.Generation && s.MatchedPods == 2 && s.UpdatedPods == 2 && s.UpdatedReadyPods == 2,
			fmt.Sprintf("status %+v", s), nil
	})
	framework.WaitFor(ctx, t, composeTimeout, "both containers of both pods running their new images", func(ctx context.Context) (bool, string, error) {
		pods := clonePods(ctx, t, f, ns, "web")
		done := 0
		for i := range pods {
			p := &pods[i]
			if composeRunning(p, "main", appImage) && composeRunning(p, "agent", agentImage) {
				done++
			}
		}
		return done == 2, fmt.Sprintf("%d of %d pods done", done, len(pods)), nil
	})
	for _, p := range clonePods(ctx, t, f, ns, "web") {
		old, ok := before[p.Name]
		if !ok || old.UID != p.UID {
			t.Errorf("pod %s (uid %s) is not one from before the updates: both update in place", p.Name, p.UID)
			continue
		}
		for _, c := range []string{"main", "agent"} {
			was, now := framework.ContainerStatusOf(&old, c), framework.ContainerStatusOf(&p, c)
			if was == nil || now == nil || now.RestartCount != was.RestartCount+1 {
				t.Errorf("pod %s container %s: restarts %v then %v, want exactly one restart", p.Name, c, restarts(was), restarts(now))
			}
		}
	}
}

// composeRunning says whether p's container name runs img: the spec says so and the status shows
// it running at that image.
func composeRunning(p *corev1.Pod, name, img string) bool {
	c := framework.ContainerSpecOf(p, name)
	st := framework.ContainerStatusOf(p, name)
	return c != nil && c.Image == img && st != nil && st.State.Running != nil && st.Image == img
}

func restarts(st *corev1.ContainerStatus) any {
	if st == nil {
		return "no status"
	}
	return st.RestartCount
}
