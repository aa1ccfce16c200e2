//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// cloneSetTimeout bounds each step of a CloneSet test: pods start in seconds on the local node.
const cloneSetTimeout = 2 * time.Minute

// clonePods lists the pods of CloneSet name, by its selector.
func clonePods(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string) []corev1.Pod {
	t.Helper()
	list, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	return list.Items
}

// waitCloneSet waits until CloneSet name reports want replicas, all updated, ready and available,
// at its update revision, and returns it.
func waitCloneSet(ctx context.Context, t *testing.T, kc versioned.Interface, ns, name string, want int32) *appsv1alpha1.CloneSet {
	t.Helper()
	var cs *appsv1alpha1.CloneSet
	framework.WaitFor(ctx, t, cloneSetTimeout, fmt.Sprintf("CloneSet %s with %d pods updated and available", name, want), func(ctx context.Context) (bool, string, error) {
		var err error
		if cs, err = kc.AppsV1alpha1().CloneSets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, "", err
		}
		s := cs.Status
		return s.ObservedGeneration == cs.Generation && s.Replicas == want && s.UpdatedReplicas == want &&
				s.UpdatedAvailableReplicas == want && s.AvailableReplicas == want && s.CurrentRevision == s.UpdateRevision,
			fmt.Sprintf("status %+v", s), nil
	})
	return cs
}

// A CloneSet written as OpenKruise's docs write it (v1alpha1) scales through its scale
// subresource, updates an image in place (same pods, same IPs, containers restarted) and
// recreates pods for a change that cannot be applied in place.
func TestCloneSetScaleAndUpdateInPlace(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 8*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset")
	variant := f.BusyboxVariant(t)

	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name: "main", Image: f.Image("public/busybox:1.35"),
						Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
					}},
				},
			},
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{
				Type:           appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			},
		},
	}
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CloneSet: %v", err)
	}
	waitCloneSet(ctx, t, kc, ns, "web", 2)
	before := map[string]corev1.Pod{}
	for _, p := range clonePods(ctx, t, f, ns, "web") {
		before[p.Name] = p
		if !hasReadinessGate(&p, pub.InPlaceUpdateReady) || !hasReadinessGate(&p, pub.KruisePodReady) {
			t.Errorf("pod %s lacks the InPlaceUpdateReady or KruisePodReady readiness gate: %v", p.Name, p.Spec.ReadinessGates)
		}
	}
	if len(before) != 2 {
		t.Fatalf("%d pods, want 2", len(before))
	}

	// In place: a new image.
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, variant)
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Patch(ctx, "web", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the image: %v", err)
	}
	updated := waitCloneSet(ctx, t, kc, ns, "web", 2)
	for _, p := range clonePods(ctx, t, f, ns, "web") {
		old, ok := before[p.Name]
		if !ok || old.UID != p.UID || old.Status.PodIP != p.Status.PodIP {
			t.Errorf("pod %s (uid %s, IP %s) is not the one before the update: updated in place keeps the pod", p.Name, p.UID, p.Status.PodIP)
			continue
		}
		st := p.Status.ContainerStatuses[0]
		if st.ContainerID == old.Status.ContainerStatuses[0].ContainerID || st.RestartCount != old.Status.ContainerStatuses[0].RestartCount+1 {
			t.Errorf("pod %s container %s (restarts %d): want a new container, restarted once", p.Name, st.ContainerID, st.RestartCount)
		}
		if p.Spec.Containers[0].Image != variant || p.Labels["controller-revision-hash"] != updated.Status.UpdateRevision {
			t.Errorf("pod %s runs %s at revision %s, want %s at %s", p.Name, p.Spec.Containers[0].Image, p.Labels["controller-revision-hash"], variant, updated.Status.UpdateRevision)
		}
		var state pub.InPlaceUpdateState
		if err := json.Unmarshal([]byte(p.Annotations[pub.InPlaceUpdateStateKey]), &state); err != nil || state.Revision != updated.Status.UpdateRevision {
			t.Errorf("pod %s in-place update state %q (%v), want revision %s", p.Name, p.Annotations[pub.InPlaceUpdateStateKey], err, updated.Status.UpdateRevision)
		}
	}

	// The scale subresource, as kubectl scale and an HPA use it.
	scale, err := kc.AppsV1alpha1().CloneSets(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the scale subresource: %v", err)
	}
	scale.Spec.Replicas = 3
	if _, err := kc.AppsV1alpha1().CloneSets(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scaling to 3: %v", err)
	}
	waitCloneSet(ctx, t, kc, ns, "web", 3)

	// Not in place: an env change recreates the pods.
	patch = `[{"op":"add","path":"/spec/template/spec/containers/0/env","value":[{"name":"MODE","value":"b"}]}]`
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Patch(ctx, "web", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the env: %v", err)
	}
	waitCloneSet(ctx, t, kc, ns, "web", 3)
	// The status counts only pods not being deleted (as OpenKruise's does), so an old pod may
	// still be terminating here; none may be running without a deletion, and all must go.
	for _, p := range clonePods(ctx, t, f, ns, "web") {
		if _, ok := before[p.Name]; ok && p.DeletionTimestamp == nil {
			t.Errorf("pod %s survived an env change: it should have been recreated", p.Name)
		}
	}
	framework.WaitFor(ctx, t, cloneSetTimeout, "the pods from before the env change gone", func(ctx context.Context) (bool, string, error) {
		var left []string
		for _, p := range clonePods(ctx, t, f, ns, "web") {
			if _, ok := before[p.Name]; ok {
				left = append(left, p.Name)
			}
		}
		return len(left) == 0, fmt.Sprintf("still there: %v", left), nil
	})

	// Scale in.
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("scaling to 1: %v", err)
	}
	waitCloneSet(ctx, t, kc, ns, "web", 1)
	framework.WaitFor(ctx, t, cloneSetTimeout, "one pod left", func(ctx context.Context) (bool, string, error) {
		n := len(clonePods(ctx, t, f, ns, "web"))
		return n == 1, fmt.Sprintf("%d pods", n), nil
	})
}

func hasReadinessGate(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, g := range p.Spec.ReadinessGates {
		if g.ConditionType == t {
			return true
		}
	}
	return false
}

// A label that a container reads as env changes in place: kruise-daemon restarts that container
// once (deciding from the env the runtime started it with, no exec: busybox's env would work, but
// nothing here needs it), and the new container sees the new value.
func TestCloneSetEnvFromLabelInPlace(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-env")

	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "env", Namespace: ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "env"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "env", "version": "v1"}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name: "main", Image: f.Image("public/busybox:1.35"),
						Command: []string{"sh", "-c", "echo VERSION=$VERSION; trap 'exit 0' TERM; while true; do sleep 1; done"},
						Env: []corev1.EnvVar{{Name: "VERSION", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['version']"}}}},
					}},
				},
			},
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
		},
	}
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CloneSet: %v", err)
	}
	waitCloneSet(ctx, t, kc, ns, "env", 1)
	before := clonePods(ctx, t, f, ns, "env")
	if len(before) != 1 {
		t.Fatalf("%d pods, want 1", len(before))
	}

	patch := `[{"op":"replace","path":"/spec/template/metadata/labels/version","value":"v2"}]`
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Patch(ctx, "env", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the label: %v", err)
	}
	waitCloneSet(ctx, t, kc, ns, "env", 1)
	after := clonePods(ctx, t, f, ns, "env")
	if len(after) != 1 || after[0].UID != before[0].UID {
		t.Fatalf("pods %v after the update, want the same pod %s", after, before[0].Name)
	}
	p := after[0]
	if p.Labels["version"] != "v2" {
		t.Errorf("pod label version=%q, want v2", p.Labels["version"])
	}
	if st := p.Status.ContainerStatuses[0]; st.RestartCount != before[0].Status.ContainerStatuses[0].RestartCount+1 {
		t.Errorf("container restarted %d times, want once", st.RestartCount)
	}
	framework.WaitFor(ctx, t, time.Minute, "the restarted container printing VERSION=v2", func(ctx context.Context) (bool, string, error) {
		logs, err := f.PodLogs(ctx, ns, p.Name, "main")
		if err != nil {
			return false, err.Error(), nil
		}
		return strings.Contains(logs, "VERSION=v2"), logs, nil
	})
}

// preDelete by finalizer: a pod chosen for scale-in waits in PreparingDelete while the hook's
// finalizer is on it, and goes once the hook's owner removes it.
func TestCloneSetPreDeleteHook(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-hook")
	const hook = "example.com/drain"

	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "hooked", Namespace: ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hooked"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "hooked"}, Finalizers: []string{hook}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name: "main", Image: f.Image("public/busybox:1.35"),
						Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
					}},
				},
			},
			Lifecycle: &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{hook}}},
		},
	}
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CloneSet: %v", err)
	}
	t.Cleanup(func() {
		// Let the namespace go: remove the hook from whatever pod still has it.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, p := range clonePods(ctx, t, f, ns, "hooked") {
			_, _ = f.Client.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})
	waitCloneSet(ctx, t, kc, ns, "hooked", 2)

	if _, err := kc.AppsV1alpha1().CloneSets(ns).Patch(ctx, "hooked", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("scaling to 1: %v", err)
	}
	var held corev1.Pod
	framework.WaitFor(ctx, t, cloneSetTimeout, "a pod in PreparingDelete", func(ctx context.Context) (bool, string, error) {
		for _, p := range clonePods(ctx, t, f, ns, "hooked") {
			if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete) {
				held = p
				return true, "", nil
			}
		}
		return false, "none yet", nil
	})
	if held.DeletionTimestamp != nil {
		t.Fatalf("pod %s was deleted while its preDelete hook held it", held.Name)
	}

	if _, err := f.Client.CoreV1().Pods(ns).Patch(ctx, held.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("releasing the hook: %v", err)
	}
	framework.WaitFor(ctx, t, cloneSetTimeout, "the released pod gone, one left", func(ctx context.Context) (bool, string, error) {
		pods := clonePods(ctx, t, f, ns, "hooked")
		for _, p := range pods {
			if p.Name == held.Name {
				return false, "still there", nil
			}
		}
		return len(pods) == 1, fmt.Sprintf("%d pods", len(pods)), nil
	})
}
