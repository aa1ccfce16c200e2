//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/controller/uniteddeployment"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// udZoneSubset is a subset whose pods must land in zone value (a simulated node's zone label) and
// tolerate the simulated nodes' taint.
func udZoneSubset(name, value string) appsv1alpha1.Subset {
	return appsv1alpha1.Subset{Name: name,
		NodeSelectorTerm: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}}},
		Tolerations: []corev1.Toleration{framework.SimNodeToleration()},
	}
}

// newCloneSetUD creates UnitedDeployment name of CloneSets in ns over subsets.
func newCloneSetUD(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, ns, name string, replicas int32,
	subsets []appsv1alpha1.Subset, strategy appsv1alpha1.UnitedDeploymentScheduleStrategy) *appsv1alpha1.UnitedDeployment {
	t.Helper()
	labels := map[string]string{"app": name}
	pod := f.BusyboxPod(ns, "x", "main")
	ud := &appsv1alpha1.UnitedDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1alpha1.UnitedDeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: appsv1alpha1.SubsetTemplate{CloneSetTemplate: &appsv1alpha1.CloneSetTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: appsv1alpha1.CloneSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
				},
			}},
			Topology: appsv1alpha1.Topology{Subsets: subsets, ScheduleStrategy: strategy},
		},
	}
	created, err := kc.AppsV1alpha1().UnitedDeployments(ns).Create(ctx, ud, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating UnitedDeployment: %v", err)
	}
	return created
}

func updateUD(ctx context.Context, t *testing.T, kc versioned.Interface, ns, name string, mutate func(*appsv1alpha1.UnitedDeployment)) {
	t.Helper()
	framework.WaitFor(ctx, t, 30*time.Second, "UnitedDeployment updated", func(ctx context.Context) (bool, string, error) {
		ud, err := kc.AppsV1alpha1().UnitedDeployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		mutate(ud)
		if _, err := kc.AppsV1alpha1().UnitedDeployments(ns).Update(ctx, ud, metav1.UpdateOptions{}); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
}

// waitZones waits until the UnitedDeployment's pods are exactly want per subset (all Running
// and Ready, none terminating, each on a node of its subset's zone) and its status says so.
func waitZones(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, ns, name string, zones map[string]string, want map[string]int) {
	t.Helper()
	framework.WaitFor(ctx, t, 3*time.Minute, fmt.Sprintf("pods per subset %v", want), func(ctx context.Context) (bool, string, error) {
		pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		nodes := map[string]string{}
		got := map[string]int{}
		for _, p := range pods.Items {
			subset := p.Labels[appsv1alpha1.SubSetNameLabelKey]
			if p.DeletionTimestamp != nil || !framework.PodReady(&p) {
				return false, fmt.Sprintf("pod %s of %s not Ready or terminating", p.Name, subset), nil
			}
			z, ok := nodes[p.Spec.NodeName]
			if !ok {
				labels, err := f.NodeLabelsOf(ctx, corev1.LabelTopologyZone, p.Spec.NodeName)
				if err != nil {
					return false, "", framework.Retry(err)
				}
				z = labels[p.Spec.NodeName]
				nodes[p.Spec.NodeName] = z
			}
			if z != zones[subset] {
				return false, "", fmt.Errorf("pod %s of subset %s runs in zone %q, want %q", p.Name, subset, z, zones[subset])
			}
			got[subset]++
		}
		if fmt.Sprint(got) != fmt.Sprint(udNonZero(want)) {
			return false, fmt.Sprintf("pods per subset %v", got), nil
		}
		ud, err := kc.AppsV1alpha1().UnitedDeployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		total := 0
		for _, n := range want {
			total += n
		}
		st := ud.Status
		if st.ObservedGeneration != ud.Generation || int(st.Replicas) != total || int(st.ReadyReplicas) != total {
			return false, fmt.Sprintf("status generation %d/%d replicas %d ready %d", st.ObservedGeneration, ud.Generation, st.Replicas, st.ReadyReplicas), nil
		}
		return true, "", nil
	})
}

func udNonZero(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// TestUnitedDeployment runs UnitedDeployments of CloneSets over three simulated zones.
func TestUnitedDeployment(t *testing.T) {
	t.Parallel()

	// docs/examples/uniteddeployment.yaml as written (its namespace aside) on simulated nodes of
	// zones zone-a, zone-b and zone-c: 50% in zone-a (3), the rest shared, the extra unit to the
	// greater name (zone-b 1, zone-c 2); zone-c's pods carry its patch's label.
	t.Run("DocsExample", func(t *testing.T) {
		t.Parallel()
		f := framework.New(t)
		kc := f.KruiseClient(t)
		ctx := framework.Context(t, 10*time.Minute)
		ns := f.NewNamespace(ctx, t, "ud-example")
		var ud *appsv1alpha1.UnitedDeployment
		for _, obj := range exampleObjects(t, "../../docs/examples/uniteddeployment.yaml") {
			switch o := obj.(type) {
			case *corev1.Node:
				f.SimNodes(ctx, t, "ud-example", 1, map[string]string{corev1.LabelTopologyZone: o.Labels[corev1.LabelTopologyZone]})
			case *appsv1alpha1.UnitedDeployment:
				ud = o
			}
		}
		if ud == nil {
			t.Fatal("docs/examples/uniteddeployment.yaml has no UnitedDeployment")
		}
		ud.Namespace = ns
		if _, err := kc.AppsV1alpha1().UnitedDeployments(ns).Create(ctx, ud, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating the example: %v", err)
		}
		zones := map[string]string{"zone-a": "zone-a", "zone-b": "zone-b", "zone-c": "zone-c"}
		waitZones(ctx, t, f, kc, ns, "web", zones, map[string]int{"zone-a": 3, "zone-b": 1, "zone-c": 2})
		pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web,tier=canary"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Labels[appsv1alpha1.SubSetNameLabelKey] != "zone-c" {
				t.Errorf("pod %s of %s carries zone-c's patch", p.Name, p.Labels[appsv1alpha1.SubSetNameLabelKey])
			}
		}
		if len(pods.Items) != 2 {
			t.Errorf("%d pods carry zone-c's patch, want 2", len(pods.Items))
		}
	})

	// Pods land in their subsets' zones; scale up and down keep the even spread.
	t.Run("ZonesAndScale", func(t *testing.T) {
		t.Parallel()
		f := framework.New(t)
		kc := f.KruiseClient(t)
		ctx := framework.Context(t, 10*time.Minute)
		ns := f.NewNamespace(ctx, t, "ud-zones")
		zones := map[string]string{"a": ns + "-a", "b": ns + "-b", "c": ns + "-c"}
		var subsets []appsv1alpha1.Subset
		for _, s := range []string{"a", "b", "c"} {
			f.SimNodes(ctx, t, "ud-"+s, 1, map[string]string{corev1.LabelTopologyZone: zones[s]})
			subsets = append(subsets, udZoneSubset(s, zones[s]))
		}
		newCloneSetUD(ctx, t, f, kc, ns, "web", 6, subsets, appsv1alpha1.UnitedDeploymentScheduleStrategy{})
		waitZones(ctx, t, f, kc, ns, "web", zones, map[string]int{"a": 2, "b": 2, "c": 2})
		updateUD(ctx, t, kc, ns, "web", func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Replicas = ptr.To[int32](9) })
		waitZones(ctx, t, f, kc, ns, "web", zones, map[string]int{"a": 3, "b": 3, "c": 3})
		updateUD(ctx, t, kc, ns, "web", func(ud *appsv1alpha1.UnitedDeployment) { ud.Spec.Replicas = ptr.To[int32](4) })
		// 4 over 3: the extra unit goes to the subset with most pods now (all equal: by name, c).
		waitZones(ctx, t, f, kc, ns, "web", zones, map[string]int{"a": 1, "b": 1, "c": 2})
	})

	// A template update stops at each subset's partition: updated = replicas - partition.
	t.Run("Partitions", func(t *testing.T) {
		t.Parallel()
		f := framework.New(t)
		kc := f.KruiseClient(t)
		ctx := framework.Context(t, 10*time.Minute)
		ns := f.NewNamespace(ctx, t, "ud-partitions")
		zones := map[string]string{"a": ns + "-a", "b": ns + "-b", "c": ns + "-c"}
		var subsets []appsv1alpha1.Subset
		for _, s := range []string{"a", "b", "c"} {
			f.SimNodes(ctx, t, "ud-"+s, 1, map[string]string{corev1.LabelTopologyZone: zones[s]})
			subsets = append(subsets, udZoneSubset(s, zones[s]))
		}
		newCloneSetUD(ctx, t, f, kc, ns, "web", 6, subsets, appsv1alpha1.UnitedDeploymentScheduleStrategy{})
		waitZones(ctx, t, f, kc, ns, "web", zones, map[string]int{"a": 2, "b": 2, "c": 2})
		updateUD(ctx, t, kc, ns, "web", func(ud *appsv1alpha1.UnitedDeployment) {
			ud.Spec.UpdateStrategy.ManualUpdate = &appsv1alpha1.ManualUpdate{Partitions: map[string]int32{"a": 1, "b": 5}}
			tpl := &ud.Spec.Template.CloneSetTemplate.Spec.Template
			tpl.Spec.Containers[0].Env = append(tpl.Spec.Containers[0].Env, corev1.EnvVar{Name: "VERSION", Value: "2"})
		})
		want := map[string]int{"a": 1, "b": 0, "c": 2} // b's partition is capped at its 2 replicas
		framework.WaitFor(ctx, t, 3*time.Minute, fmt.Sprintf("updated pods per subset %v", want), func(ctx context.Context) (bool, string, error) {
			ud, err := kc.AppsV1alpha1().UnitedDeployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil || ud.Status.UpdateStatus == nil {
				return false, "no update status", framework.Retry(err)
			}
			rev := ud.Status.UpdateStatus.UpdatedRevision
			if got := ud.Status.UpdateStatus.CurrentPartitions; fmt.Sprint(got) != fmt.Sprint(map[string]int32{"a": 1, "b": 2, "c": 0}) {
				return false, fmt.Sprintf("partitions %v", got), nil
			}
			pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, "", framework.Retry(err)
			}
			got := map[string]int{}
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil || !framework.PodReady(&p) {
					return false, fmt.Sprintf("pod %s not Ready", p.Name), nil
				}
				if p.Labels[uniteddeployment.RevisionLabel] == rev {
					got[p.Labels[appsv1alpha1.SubSetNameLabelKey]]++
				}
			}
			if len(pods.Items) != 6 || fmt.Sprint(got) != fmt.Sprint(udNonZero(want)) {
				return false, fmt.Sprintf("%d pods, updated per subset %v", len(pods.Items), got), nil
			}
			if ud.Status.UpdatedReplicas != 3 || ud.Status.CurrentRevision == rev {
				return false, fmt.Sprintf("status updated %d current %s", ud.Status.UpdatedReplicas, ud.Status.CurrentRevision), nil
			}
			return true, "", nil
		})
	})

	// Under Adaptive, a subset whose zone has no node marks itself unschedulable once its pods
	// stay unscheduled past rescheduleCriticalSeconds, and its replicas move to the next subset.
	t.Run("AdaptiveZoneWithoutCapacity", func(t *testing.T) {
		t.Parallel()
		f := framework.New(t)
		kc := f.KruiseClient(t)
		ctx := framework.Context(t, 10*time.Minute)
		ns := f.NewNamespace(ctx, t, "ud-adaptive")
		zones := map[string]string{"a": ns + "-none", "b": ns + "-b", "c": ns + "-c"}
		f.SimNodes(ctx, t, "ud-b", 1, map[string]string{corev1.LabelTopologyZone: zones["b"]})
		f.SimNodes(ctx, t, "ud-c", 1, map[string]string{corev1.LabelTopologyZone: zones["c"]})
		subsets := []appsv1alpha1.Subset{udZoneSubset("a", zones["a"]), udZoneSubset("b", zones["b"]), udZoneSubset("c", zones["c"])}
		subsets[1].MaxReplicas = ptr.To(intstr.FromInt32(2))
		newCloneSetUD(ctx, t, f, kc, ns, "web", 4, subsets, appsv1alpha1.UnitedDeploymentScheduleStrategy{
			Type:     appsv1alpha1.AdaptiveUnitedDeploymentScheduleStrategyType,
			Adaptive: &appsv1alpha1.AdaptiveUnitedDeploymentStrategy{RescheduleCriticalSeconds: ptr.To[int32](3)},
		})
		waitZones(ctx, t, f, kc, ns, "web", zones, map[string]int{"b": 2, "c": 2})
		ud, err := kc.AppsV1alpha1().UnitedDeployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := ud.Status.GetSubsetStatus("a").GetCondition(appsv1alpha1.UnitedDeploymentSubsetSchedulable)
		if c == nil || c.Status != corev1.ConditionFalse || c.Reason != "reschedule" {
			t.Fatalf("subset a's Schedulable condition %+v, want False/reschedule", c)
		}
		if got := ud.Status.SubsetReplicas; got["a"] != 0 || got["b"] != 2 || got["c"] != 2 {
			t.Fatalf("subsetReplicas %v, want a:0 b:2 c:2", got)
		}
	})
}
