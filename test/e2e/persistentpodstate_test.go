//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

const ppsTimeout = 2 * time.Minute

// ppsExample is docs/examples/persistentpodstate.yaml's StatefulSet and PersistentPodState in ns,
// the StatefulSet's pods sent to the simulated nodes of zone.
func ppsExample(t *testing.T, ns, zone string) (*appsv1.StatefulSet, *appsv1alpha1.PersistentPodState) {
	t.Helper()
	var sts *appsv1.StatefulSet
	var pps *appsv1alpha1.PersistentPodState
	for _, obj := range exampleObjects(t, "../../docs/examples/persistentpodstate.yaml") {
		switch o := obj.(type) {
		case *appsv1.StatefulSet:
			sts = o
		case *appsv1alpha1.PersistentPodState:
			pps = o
		}
	}
	if sts == nil || pps == nil {
		t.Fatal("docs/examples/persistentpodstate.yaml: want a StatefulSet and a PersistentPodState")
	}
	sts.Namespace, pps.Namespace = ns, ns
	sts.Spec.Template.Spec.Tolerations = []corev1.Toleration{framework.SimNodeToleration()}
	sts.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: zone}
	return sts, pps
}

// waitStates waits until the PersistentPodState's status satisfies ok and returns it.
func waitStates(ctx context.Context, t *testing.T, kc versioned.Interface, ns, name, desc string,
	ok func(map[string]appsv1alpha1.PodState) bool) map[string]appsv1alpha1.PodState {
	t.Helper()
	var states map[string]appsv1alpha1.PodState
	framework.WaitFor(ctx, t, ppsTimeout, "PersistentPodState "+name+": "+desc, func(ctx context.Context) (bool, string, error) {
		pps, err := kc.AppsV1alpha1().PersistentPodStates(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		states = pps.Status.PodStates
		raw, _ := json.Marshal(states)
		return ok(states), string(raw), nil
	})
	return states
}

// waitReady waits for the StatefulSet pod name, with a uid other than old (any when empty),
// Running and Ready, and returns it; the pod may not exist yet.
func waitReady(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string, old types.UID) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	framework.WaitFor(ctx, t, ppsTimeout, fmt.Sprintf("pod %s/%s (not %q) Running and Ready", ns, name, old), func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not created yet", nil
		} else if err != nil {
			return false, "", framework.Retry(err)
		}
		got = p
		ok := p.UID != old && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && framework.PodReady(p)
		return ok, fmt.Sprintf("uid %s phase %s node %q", p.UID, p.Status.Phase, p.Spec.NodeName), nil
	})
	return got
}

// docs/examples/persistentpodstate.yaml on three simulated nodes of one zone: each Ready pod's
// node and zone are recorded; a deleted pod is recreated with its node's hostname in its
// nodeSelector (and the injected annotation) and runs there again; once a pod's node is deleted
// its hostname is dropped from the state (the zone stays), and the pod, recreated, is not held
// Pending: it runs on another node of the zone, where it is recorded anew.
func TestPersistentPodStateReturnsToNode(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "pps")
	zone := "sim-" + ns
	f.SimNodes(ctx, t, "pps", 3, map[string]string{corev1.LabelTopologyZone: zone})
	sts, pps := ppsExample(t, ns, zone)
	if _, err := kc.AppsV1alpha1().PersistentPodStates(ns).Create(ctx, pps, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PersistentPodState: %v", err)
	}
	if _, err := f.Client.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"web-pps-0", "web-pps-1"} {
		pods[name] = waitReady(ctx, t, f, ns, name, "")
	}
	recordedOn := func(name, node string) func(map[string]appsv1alpha1.PodState) bool {
		return func(s map[string]appsv1alpha1.PodState) bool {
			st, ok := s[name]
			return ok && st.NodeName == node && st.NodeTopologyLabels[corev1.LabelHostname] == node && st.NodeTopologyLabels[corev1.LabelTopologyZone] == zone
		}
	}
	for name, p := range pods {
		waitStates(ctx, t, kc, ns, pps.Name, name+" recorded on "+p.Spec.NodeName, recordedOn(name, p.Spec.NodeName))
	}

	// A deleted pod comes back to its node.
	victim := pods["web-pps-0"]
	if err := f.Client.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting %s: %v", victim.Name, err)
	}
	back := waitReady(ctx, t, f, ns, victim.Name, victim.UID)
	if got := back.Spec.NodeSelector[corev1.LabelHostname]; got != victim.Spec.NodeName {
		t.Errorf("recreated %s: nodeSelector %v, want %s=%s", back.Name, back.Spec.NodeSelector, corev1.LabelHostname, victim.Spec.NodeName)
	}
	if got := back.Annotations[appsv1alpha1.InjectedPersistentPodStateAnnotation]; got != pps.Name {
		t.Errorf("recreated %s: annotation %s=%q, want %q", back.Name, appsv1alpha1.InjectedPersistentPodStateAnnotation, got, pps.Name)
	}
	if back.Spec.NodeName != victim.Spec.NodeName {
		t.Errorf("recreated %s runs on %s, want its node %s", back.Name, back.Spec.NodeName, victim.Spec.NodeName)
	}

	// The node of the other pod goes: its hostname leaves the state, the zone stays.
	gone := pods["web-pps-1"]
	if err := f.Client.CoreV1().Nodes().Delete(ctx, gone.Spec.NodeName, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting node %s: %v", gone.Spec.NodeName, err)
	}
	waitStates(ctx, t, kc, ns, pps.Name, gone.Name+"'s hostname dropped, its zone kept", func(s map[string]appsv1alpha1.PodState) bool {
		st, ok := s[gone.Name]
		_, host := st.NodeTopologyLabels[corev1.LabelHostname]
		return ok && !host && st.NodeTopologyLabels[corev1.LabelTopologyZone] == zone
	})
	// Nothing finishes the deletion of a pod on a deleted simulated node: force it, as the pod
	// garbage collector would.
	if err := f.Client.CoreV1().Pods(ns).Delete(ctx, gone.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting %s: %v", gone.Name, err)
	}
	moved := waitReady(ctx, t, f, ns, gone.Name, gone.UID)
	if _, ok := moved.Spec.NodeSelector[corev1.LabelHostname]; ok {
		t.Errorf("recreated %s: nodeSelector %v still names a hostname", moved.Name, moved.Spec.NodeSelector)
	}
	if moved.Spec.NodeName == gone.Spec.NodeName {
		t.Fatalf("recreated %s on the deleted node %s", moved.Name, gone.Spec.NodeName)
	}
	waitStates(ctx, t, kc, ns, pps.Name, gone.Name+" recorded on its new node", recordedOn(gone.Name, moved.Spec.NodeName))
}

// A StatefulSet annotated kruise.io/auto-generate-persistent-pod-state gets a PersistentPodState
// of its name, controlled by it, with its topology keys (preferred at weight 100), which records
// its pods; removing the annotation deletes it.
func TestPersistentPodStateAutoGenerated(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "pps-auto")
	zone := "sim-" + ns
	f.SimNodes(ctx, t, "ppsauto", 1, map[string]string{corev1.LabelTopologyZone: zone})
	sts, _ := ppsExample(t, ns, zone)
	sts.Spec.Replicas = ptr.To[int32](1)
	sts.Annotations = map[string]string{
		appsv1alpha1.AnnotationAutoGeneratePersistentPodState: "true",
		appsv1alpha1.AnnotationRequiredPersistentTopology:     corev1.LabelHostname,
		appsv1alpha1.AnnotationPreferredPersistentTopology:    corev1.LabelTopologyZone,
	}
	created, err := f.Client.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
	framework.WaitFor(ctx, t, ppsTimeout, "PersistentPodState "+sts.Name+" generated", func(ctx context.Context) (bool, string, error) {
		pps, err := kc.AppsV1alpha1().PersistentPodStates(ns).Get(ctx, sts.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not yet", nil
		} else if err != nil {
			return false, "", framework.Retry(err)
		}
		ref := metav1.GetControllerOf(pps)
		if ref == nil || ref.UID != created.UID {
			return false, "", fmt.Errorf("not controlled by the StatefulSet: %+v", pps.OwnerReferences)
		}
		spec := pps.Spec
		ok := spec.TargetReference == appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name} &&
			spec.RequiredPersistentTopology != nil && len(spec.RequiredPersistentTopology.NodeTopologyKeys) == 1 &&
			spec.RequiredPersistentTopology.NodeTopologyKeys[0] == corev1.LabelHostname &&
			len(spec.PreferredPersistentTopology) == 1 && spec.PreferredPersistentTopology[0].Weight == 100
		raw, _ := json.Marshal(spec)
		return ok, string(raw), nil
	})
	pod := waitReady(ctx, t, f, ns, sts.Name+"-0", "")
	waitStates(ctx, t, kc, ns, sts.Name, pod.Name+" recorded", func(s map[string]appsv1alpha1.PodState) bool {
		return s[pod.Name].NodeName == pod.Spec.NodeName
	})

	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, appsv1alpha1.AnnotationAutoGeneratePersistentPodState)
	if _, err := f.Client.AppsV1().StatefulSets(ns).Patch(ctx, sts.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing the annotation: %v", err)
	}
	framework.WaitFor(ctx, t, ppsTimeout, "PersistentPodState "+sts.Name+" deleted", func(ctx context.Context) (bool, string, error) {
		_, err := kc.AppsV1alpha1().PersistentPodStates(ns).Get(ctx, sts.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", framework.Retry(err)
	})
}
