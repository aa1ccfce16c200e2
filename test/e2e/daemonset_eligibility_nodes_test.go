//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/test/e2e/framework"
)

// conditionTaints are the NoSchedule taints the node lifecycle controller keeps on a node for
// its conditions and spec.unschedulable, by key.
func conditionTaints(n *corev1.Node) []string {
	var out []string
	for _, c := range n.Status.Conditions {
		switch {
		case c.Type == corev1.NodeReady && c.Status == corev1.ConditionFalse:
			out = append(out, corev1.TaintNodeNotReady)
		case c.Type == corev1.NodeReady && c.Status == corev1.ConditionUnknown:
			out = append(out, corev1.TaintNodeUnreachable)
		case c.Type == corev1.NodeMemoryPressure && c.Status == corev1.ConditionTrue:
			out = append(out, corev1.TaintNodeMemoryPressure)
		case c.Type == corev1.NodeDiskPressure && c.Status == corev1.ConditionTrue:
			out = append(out, corev1.TaintNodeDiskPressure)
		case c.Type == corev1.NodePIDPressure && c.Status == corev1.ConditionTrue:
			out = append(out, corev1.TaintNodePIDPressure)
		case c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionTrue:
			out = append(out, corev1.TaintNodeNetworkUnavailable)
		}
	}
	if n.Spec.Unschedulable {
		out = append(out, corev1.TaintNodeUnschedulable)
	}
	slices.Sort(out)
	return out
}

// managedNoScheduleTaints are the node's NoSchedule taints of the keys the node lifecycle
// controller manages, by key.
func managedNoScheduleTaints(n *corev1.Node) []string {
	managed := []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeMemoryPressure,
		corev1.TaintNodeDiskPressure, corev1.TaintNodePIDPressure, corev1.TaintNodeNetworkUnavailable, corev1.TaintNodeUnschedulable}
	var out []string
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule && slices.Contains(managed, t.Key) {
			out = append(out, t.Key)
		}
	}
	slices.Sort(out)
	return out
}

// createEligNodes creates the simulated nodes with their conditions and leases, keeps the leases
// fresh until the test ends, and waits until the node lifecycle controller has given every node
// the NoSchedule taints of its conditions (the not-ready one the API server puts on a new node
// gone from the Ready ones): from then on what the nodes look like to a DaemonSet controller
// does not change. Its NoExecute taints for not-ready and unreachable nodes come later, rate
// limited, but every daemon pod tolerates them. It returns the nodes' names by suffix.
func createEligNodes(ctx context.Context, t *testing.T, f *framework.Framework, ns string) map[string]string {
	t.Helper()
	names := map[string]string{}
	leaseCtx, stopLeases := context.WithCancel(context.Background())
	var renewing sync.WaitGroup
	t.Cleanup(func() {
		stopLeases()
		renewing.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, name := range names {
			if err := f.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting node %s: %v", name, err)
			}
			err := f.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Logf("deleting lease %s: %v", name, err)
			}
		}
	})
	for _, c := range eligNodes {
		name := ns + "-" + c.suffix
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				// kruise-daemon and the NodeImage controller leave virtual-kubelet nodes alone.
				"type": "virtual-kubelet", "kruise.e2e/test": "true",
				eligKey: ns, eligPoolKey: "daemons", eligZoneKey: "a",
			}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: eligKey, Value: ns, Effect: corev1.TaintEffectNoSchedule}}},
		}
		if c.mod != nil {
			c.mod(node)
		}
		created, err := f.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating node %s: %v", name, err)
		}
		names[c.suffix] = name
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: name, UID: created.UID,
			}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NowMicro())},
		}
		if _, err := f.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating lease of node %s: %v", name, err)
		}
		conditions := c.conditions
		if conditions == nil {
			conditions = []corev1.NodeCondition{eligCondition(corev1.NodeReady, corev1.ConditionTrue)}
		}
		// A merge patch of the status, not an update: the node lifecycle controller may
		// already be writing the node.
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conditions}})
		if err != nil {
			t.Fatalf("encoding the conditions of node %s: %v", name, err)
		}
		if _, err := f.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("setting the conditions of node %s: %v", name, err)
		}
	}
	renewing.Add(1)
	go func() {
		defer renewing.Done()
		renewEligLeases(leaseCtx, t, f, slices.Collect(maps.Values(names)))
	}()

	framework.WaitFor(ctx, t, 2*time.Minute, "the node lifecycle controller to taint the nodes for their conditions", func(ctx context.Context) (bool, string, error) {
		var pending []string
		for _, name := range names {
			n, err := f.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			if want, got := conditionTaints(n), managedNoScheduleTaints(n); !slices.Equal(want, got) {
				pending = append(pending, fmt.Sprintf("%s has %v, wants %v", name, got, want))
			}
		}
		return len(pending) == 0, strings.Join(pending, "; "), nil
	})
	return names
}

// renewEligLeases renews the nodes' leases, as a kubelet would, until ctx ends.
func renewEligLeases(ctx context.Context, t *testing.T, f *framework.Framework, names []string) {
	tick := time.NewTicker(eligLeaseRenewal)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"renewTime": metav1.NowMicro()}})
		if err != nil {
			t.Errorf("encoding the lease patch: %v", err)
			return
		}
		for _, name := range names {
			_, err := f.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			if err != nil && ctx.Err() == nil {
				t.Logf("renewing the lease of node %s: %v", name, err)
			}
		}
	}
}
