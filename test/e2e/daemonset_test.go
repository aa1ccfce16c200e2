//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// daemonSetTimeout bounds each step of a DaemonSet test: one pod on the local node.
const daemonSetTimeout = 2 * time.Minute

// localNode is the e2e cluster's only node.
const localNode = "vm"

func newDaemonSet(f *framework.Framework, ns, name string, mods ...func(*appsv1beta1.DaemonSet)) *appsv1beta1.DaemonSet {
	ds := &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name: "main", Image: f.Image("public/busybox:1.35"),
						Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
					}},
				},
			},
		},
	}
	for _, m := range mods {
		m(ds)
	}
	return ds
}

// daemonPod waits for the DaemonSet's single live pod, ready, at the DaemonSet's update revision
// with the status settled on it, and returns it.
func daemonPod(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, ns, name string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	framework.WaitFor(ctx, t, daemonSetTimeout, fmt.Sprintf("DaemonSet %s with its pod updated and available", name), func(ctx context.Context) (bool, string, error) {
		ds, err := kc.AppsV1beta1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		list, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, "", err
		}
		var live []corev1.Pod
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				live = append(live, p)
			}
		}
		s := ds.Status
		ok := s.ObservedGeneration == ds.Generation && s.DesiredNumberScheduled == 1 && s.CurrentNumberScheduled == 1 &&
			s.NumberReady == 1 && s.NumberAvailable == 1 && s.UpdatedNumberScheduled == 1 && len(list.Items) == 1 && len(live) == 1 &&
			live[0].Labels["controller-revision-hash"] == s.UpdateRevision
		if ok {
			pod = live[0]
		}
		return ok, fmt.Sprintf("status %+v, %d pods", s, len(list.Items)), nil
	})
	return pod
}

func patchDaemonSet(ctx context.Context, t *testing.T, kc versioned.Interface, ns, name, patch string) {
	t.Helper()
	if _, err := kc.AppsV1beta1().DaemonSets(ns).Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching DaemonSet %s: %v", name, err)
	}
}

// An Advanced DaemonSet runs its pod on the local node with the tolerations and the node pin the
// built-in DaemonSet gives its pods, and a Standard update recreates it.
func TestDaemonSetRunsOnTheNodeAndRecreates(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "daemonset")

	if _, err := kc.AppsV1beta1().DaemonSets(ns).Create(ctx, newDaemonSet(f, ns, "agent"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DaemonSet: %v", err)
	}
	pod := daemonPod(ctx, t, f, kc, ns, "agent")
	if pod.Spec.NodeName != localNode {
		t.Errorf("pod %s on node %q, want %s", pod.Name, pod.Spec.NodeName, localNode)
	}
	want := map[string]corev1.TaintEffect{
		"node.kubernetes.io/not-ready": corev1.TaintEffectNoExecute, "node.kubernetes.io/unreachable": corev1.TaintEffectNoExecute,
		"node.kubernetes.io/disk-pressure": corev1.TaintEffectNoSchedule, "node.kubernetes.io/memory-pressure": corev1.TaintEffectNoSchedule,
		"node.kubernetes.io/pid-pressure": corev1.TaintEffectNoSchedule, "node.kubernetes.io/unschedulable": corev1.TaintEffectNoSchedule,
	}
	for _, tol := range pod.Spec.Tolerations {
		if want[tol.Key] == tol.Effect && tol.Operator == corev1.TolerationOpExists {
			delete(want, tol.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("pod %s lacks the daemon tolerations %v: has %v", pod.Name, want, pod.Spec.Tolerations)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchFields) != 1 || terms[0].MatchFields[0].Key != "metadata.name" || terms[0].MatchFields[0].Values[0] != localNode {
		t.Errorf("pod %s node affinity %+v, want matchFields metadata.name In [%s]", pod.Name, terms, localNode)
	}
	if hasReadinessGate(&pod, pub.InPlaceUpdateReady) {
		t.Errorf("a Standard DaemonSet's pod %s has the InPlaceUpdateReady gate", pod.Name)
	}

	patchDaemonSet(ctx, t, kc, ns, "agent", imagePatch(f.BusyboxVariant(t)))
	after := daemonPod(ctx, t, f, kc, ns, "agent")
	if after.UID == pod.UID {
		t.Errorf("Standard update kept pod %s (uid %s): want a new pod", after.Name, after.UID)
	}
}

// InPlaceIfPossible updates the image of the pod in place: same pod, same IP, the container
// restarted.
func TestDaemonSetInPlaceImageUpdate(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "daemonset-inplace")

	ds := newDaemonSet(f, ns, "agent", func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateDaemonSet{Type: appsv1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType}
	})
	if _, err := kc.AppsV1beta1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DaemonSet: %v", err)
	}
	before := daemonPod(ctx, t, f, kc, ns, "agent")
	if !hasReadinessGate(&before, pub.InPlaceUpdateReady) {
		t.Fatalf("pod %s lacks the InPlaceUpdateReady gate: %v", before.Name, before.Spec.ReadinessGates)
	}
	variant := f.BusyboxVariant(t)
	patchDaemonSet(ctx, t, kc, ns, "agent", imagePatch(variant))
	// The status may count the pod as updated as soon as its update starts: wait for the update
	// to finish on the pod itself (the controller sets InPlaceUpdateReady back to True).
	framework.WaitFor(ctx, t, daemonSetTimeout, "the in-place update to finish", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		var gate, ready bool
		for _, c := range p.Status.Conditions {
			gate = gate || (c.Type == pub.InPlaceUpdateReady && c.Status == corev1.ConditionTrue)
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		st := framework.ContainerStatusOf(p, "main")
		return gate && ready && st != nil && st.RestartCount > 0 && st.Ready, framework.DescribeContainerStatus(st), nil
	})
	after := daemonPod(ctx, t, f, kc, ns, "agent")
	if after.UID != before.UID || after.Status.PodIP != before.Status.PodIP {
		t.Fatalf("pod %s (uid %s, IP %s) replaced pod %s (uid %s, IP %s): want the same pod", after.Name, after.UID, after.Status.PodIP,
			before.Name, before.UID, before.Status.PodIP)
	}
	st, old := after.Status.ContainerStatuses[0], before.Status.ContainerStatuses[0]
	if after.Spec.Containers[0].Image != variant || st.ContainerID == old.ContainerID || st.RestartCount != old.RestartCount+1 {
		t.Errorf("pod %s runs %s, container %s restarted %d times: want %s in a new container, restarted once",
			after.Name, after.Spec.Containers[0].Image, st.ContainerID, st.RestartCount, variant)
	}
}

// A preDelete hook holds the pod an update replaces in PreparingDelete until the hook's label is
// removed; then the pod goes and its replacement comes.
func TestDaemonSetPreDeleteHook(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "daemonset-hook")

	ds := newDaemonSet(f, ns, "agent", func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.Template.Labels["hold"] = "true"
		ds.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"hold": "true"}}}
	})
	if _, err := kc.AppsV1beta1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DaemonSet: %v", err)
	}
	pod := daemonPod(ctx, t, f, kc, ns, "agent")
	patchDaemonSet(ctx, t, kc, ns, "agent", imagePatch(f.BusyboxVariant(t)))

	framework.WaitFor(ctx, t, daemonSetTimeout, "the old pod in PreparingDelete", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete) && p.DeletionTimestamp == nil,
			fmt.Sprintf("labels %v", p.Labels), nil
	})
	// Held: the hook is still on the pod, so nothing replaces it. Another pass of the controller
	// (a status write of the DaemonSet's own) must not change that.
	list, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].UID != pod.UID || list.Items[0].DeletionTimestamp != nil {
		t.Fatalf("while the hook holds the pod: %d pods, want only %s, not deleted", len(list.Items), pod.Name)
	}

	if _, err := f.Client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"hold":null}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing the hook label: %v", err)
	}
	after := daemonPod(ctx, t, f, kc, ns, "agent")
	if after.UID == pod.UID {
		t.Errorf("pod %s still runs after its hook was released", pod.Name)
	}
}

// partition and the update selector hold the node's old pod; once both let the node in, it is
// updated.
func TestDaemonSetPartitionAndSelector(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "daemonset-partition")

	ds := newDaemonSet(f, ns, "agent", func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateDaemonSet{Partition: ptr.To(intstr.FromInt32(1))}
	})
	if _, err := kc.AppsV1beta1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DaemonSet: %v", err)
	}
	pod := daemonPod(ctx, t, f, kc, ns, "agent")

	// held waits until the controller has seen the DaemonSet's latest generation and still left
	// the old pod alone.
	held := func(why string) {
		t.Helper()
		framework.WaitFor(ctx, t, daemonSetTimeout, why, func(ctx context.Context) (bool, string, error) {
			cur, err := kc.AppsV1beta1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			p, err := f.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			s := cur.Status
			if p.UID != pod.UID || p.DeletionTimestamp != nil {
				return false, "", fmt.Errorf("the old pod was replaced: %s", why)
			}
			return s.ObservedGeneration == cur.Generation && s.UpdatedNumberScheduled == 0 && s.CurrentNumberScheduled == 1,
				fmt.Sprintf("status %+v", s), nil
		})
	}
	patchDaemonSet(ctx, t, kc, ns, "agent", imagePatch(f.BusyboxVariant(t)))
	held("partition 1 of 1 node keeps the old pod")

	patchDaemonSet(ctx, t, kc, ns, "agent", `[{"op":"replace","path":"/spec/updateStrategy/rollingUpdate/partition","value":0},`+
		`{"op":"add","path":"/spec/updateStrategy/rollingUpdate/selector","value":{"matchLabels":{"kubernetes.io/hostname":"not-`+localNode+`"}}}]`)
	held("a selector that does not match the node keeps the old pod")

	patchDaemonSet(ctx, t, kc, ns, "agent", `[{"op":"replace","path":"/spec/updateStrategy/rollingUpdate/selector/matchLabels/kubernetes.io~1hostname","value":"`+localNode+`"}]`)
	after := daemonPod(ctx, t, f, kc, ns, "agent")
	if after.UID == pod.UID {
		t.Errorf("pod %s was not replaced once partition and selector let its node in", pod.Name)
	}
}
