//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// TestSimulatedNodes: a simulated node takes the pods its annotation says; a pod that tolerates the simulated nodes' taint is scheduled to one by its
// zone label and becomes Running and Ready there (kwok acting as its kubelet); a pod that selects
// the same zone without the toleration stays Pending; a deleted pod stays Terminating until its
// grace period ends, then goes.
func TestSimulatedNodes(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "simnodes")
	zone := "sim-" + ns
	nodes := f.SimNodesWithCapacity(ctx, t, "smoke", 1, map[string]string{corev1.LabelTopologyZone: zone}, 3)
	node, err := f.Client.CoreV1().Nodes().Get(ctx, nodes[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Status.Allocatable.Pods().Value(); got != 3 {
		t.Fatalf("simulated node %s allocatable pods %d, want 3 (its %s annotation)", nodes[0], got, framework.SimNodeMaxPodsAnnotation)
	}

	pod := f.BusyboxPod(ns, "on-sim", "main")
	pod.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: zone}
	pod.Spec.Tolerations = []corev1.Toleration{framework.SimNodeToleration()}
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3)
	if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	untolerated := f.BusyboxPod(ns, "no-toleration", "main")
	untolerated.Spec.NodeSelector = pod.Spec.NodeSelector
	if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, untolerated, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}

	running := f.WaitPod(ctx, t, ns, pod.Name, time.Minute, "Running and Ready on the simulated node", func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodRunning && framework.PodReady(p), nil
	})
	if running.Spec.NodeName != nodes[0] {
		t.Fatalf("pod ran on %q, want the simulated node %s", running.Spec.NodeName, nodes[0])
	}
	if st := framework.ContainerStatusOf(running, "main"); st == nil || st.State.Running == nil || !st.Ready {
		t.Fatalf("container status of main on the simulated node: %+v", st)
	}
	f.WaitPod(ctx, t, ns, untolerated.Name, time.Minute, "Unschedulable (the simulated node's taint)", func(p *corev1.Pod) (bool, error) {
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("pod without the toleration was bound to %s", p.Spec.NodeName)
		}
		c := framework.PodConditionOf(p, corev1.PodScheduled)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable, nil
	})

	if err := f.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod: %v", err)
	}
	terminating := f.WaitPod(ctx, t, ns, pod.Name, 30*time.Second, "Terminating", func(p *corev1.Pod) (bool, error) {
		return p.DeletionTimestamp != nil, nil
	})
	deadline := terminating.DeletionTimestamp.Time
	var goneAt time.Time
	framework.WaitFor(ctx, t, time.Minute, "pod removed after its grace period", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			goneAt = time.Now()
			return true, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, "terminating since " + p.DeletionTimestamp.String(), nil
	})
	// kwok removes it when the grace period ends, not before (a second of clock granularity:
	// deletionTimestamp is stored in whole seconds).
	if early := deadline.Sub(goneAt); early > time.Second {
		t.Fatalf("pod removed %s before its grace period ended", early)
	}
}
