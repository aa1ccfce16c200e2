//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/nodefit"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// Labels and taints of the eligibility test's nodes. eligKey, valued with the test's namespace,
// is both a label the DaemonSets select and a NoSchedule taint only they tolerate: no other
// test's pod lands on these nodes, and these DaemonSets land nowhere else.
const (
	eligKey      = "kruise.e2e/eligibility"
	eligPoolKey  = "kruise.e2e/pool"
	eligZoneKey  = "kruise.e2e/zone"
	eligExtraKey = "kruise.e2e/dedicated"
	// eligLeaseRenewal keeps the nodes' leases fresh, well within their 40 s duration, so that
	// the node lifecycle controller keeps the conditions the test gave the nodes.
	eligLeaseRenewal = 10 * time.Second
)

// eligNode is one simulated node: what it varies from a Ready node in zone a of pool daemons.
type eligNode struct {
	suffix string
	mod    func(*corev1.Node)
	// conditions replace the Ready=True condition.
	conditions []corev1.NodeCondition
	// pod and hostPod: whether the DaemonSet and its host-network variant run a pod there
	// (what the built-in controller decides; the test checks that kruise decides the same).
	pod, hostPod bool
}

func eligCondition(t corev1.NodeConditionType, s corev1.ConditionStatus) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s, Reason: "E2E", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}
}

func eligTaint(effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: eligExtraKey, Value: "x", Effect: effect})
	}
}

func eligLabel(key, value string) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Labels[key] = value }
}

// eligNodes are the cases. Not-ready, unreachable, pressure, network-unavailable and cordoned
// nodes get their taints from the node lifecycle controller, out of the conditions and
// spec.unschedulable; the daemon tolerations cover some of them and not others.
var eligNodes = []eligNode{
	{suffix: "plain", pod: true, hostPod: true},
	{suffix: "zone-b", mod: eligLabel(eligZoneKey, "b"), pod: true, hostPod: true},
	{suffix: "noschedule", mod: eligTaint(corev1.TaintEffectNoSchedule)},
	{suffix: "noexecute", mod: eligTaint(corev1.TaintEffectNoExecute)},
	{suffix: "prefer", mod: eligTaint(corev1.TaintEffectPreferNoSchedule), pod: true, hostPod: true},
	{suffix: "cordoned", mod: func(n *corev1.Node) { n.Spec.Unschedulable = true }, pod: true, hostPod: true},
	{suffix: "notready", conditions: []corev1.NodeCondition{eligCondition(corev1.NodeReady, corev1.ConditionFalse)}},
	{suffix: "unknown", conditions: []corev1.NodeCondition{eligCondition(corev1.NodeReady, corev1.ConditionUnknown)}},
	{suffix: "pressure", conditions: []corev1.NodeCondition{
		eligCondition(corev1.NodeReady, corev1.ConditionTrue), eligCondition(corev1.NodeMemoryPressure, corev1.ConditionTrue),
		eligCondition(corev1.NodeDiskPressure, corev1.ConditionTrue), eligCondition(corev1.NodePIDPressure, corev1.ConditionTrue),
	}, pod: true, hostPod: true},
	{suffix: "nonet", conditions: []corev1.NodeCondition{
		eligCondition(corev1.NodeReady, corev1.ConditionTrue), eligCondition(corev1.NodeNetworkUnavailable, corev1.ConditionTrue),
	}, hostPod: true},
	{suffix: "zone-c", mod: eligLabel(eligZoneKey, "c")},
	{suffix: "other-pool", mod: eligLabel(eligPoolKey, "other")},
}

// eligTemplate is the DaemonSets' pod template: it selects the test's nodes of pool daemons in
// zones a and b (nodeSelector and required node affinity), tolerates the test's taint, and
// tolerates unreachable nodes for 300 s only, which a daemon pod's default toleration overrides.
func eligTemplate(f *framework.Framework, ns, app string, hostNetwork bool) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			HostNetwork:                   hostNetwork,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			NodeSelector:                  map[string]string{eligKey: ns, eligPoolKey: "daemons"},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: eligZoneKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}},
				}}},
			}},
			Tolerations: []corev1.Toleration{
				{Key: eligKey, Operator: corev1.TolerationOpEqual, Value: ns, Effect: corev1.TaintEffectNoSchedule},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
			Containers: []corev1.Container{{Name: "main", Image: f.Image("public/busybox:1.35"), Command: []string{"sleep", "3600"}}},
		},
	}
}

// eligCounts are the status numbers both controllers must agree on.
type eligCounts struct{ Desired, Current, Misscheduled int32 }

// eligStatus reads a DaemonSet's counts; settled is false until it has seen its generation.
type eligStatus func(ctx context.Context) (counts eligCounts, settled bool, err error)

// eligPods waits until the DaemonSet named app has a pod on every node it should run one on
// (its status says so, and the pods listed agree) and returns its pods by node and its counts.
func eligPods(ctx context.Context, t *testing.T, f *framework.Framework, ns, app string, status eligStatus) (map[string]*corev1.Pod, eligCounts) {
	t.Helper()
	var byNode map[string]*corev1.Pod
	var counts eligCounts
	framework.WaitFor(ctx, t, 2*time.Minute, "DaemonSet "+app+" to create its pods", func(ctx context.Context) (bool, string, error) {
		c, settled, err := status(ctx)
		if err != nil {
			return false, "", err
		}
		list, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return false, "", err
		}
		byNode = map[string]*corev1.Pod{}
		for i := range list.Items {
			p := &list.Items[i]
			if p.DeletionTimestamp == nil {
				byNode[nodefit.TargetNode(p)] = p
			}
		}
		counts = c
		done := settled && c.Desired > 0 && c.Current == c.Desired && int32(len(byNode)) == c.Current+c.Misscheduled
		return done, fmt.Sprintf("status %+v, pods on %v", c, slices.Sorted(maps.Keys(byNode))), nil
	})
	return byNode, counts
}

// Node eligibility of an Advanced DaemonSet is the built-in DaemonSet's: the same manifest as
// apps/v1 and as apps.kruise.io/v1alpha1 puts pods on the same simulated nodes (taints of every
// effect, cordoned, not-ready, unreachable, pressure and network-unavailable nodes, nodeSelector
// and required node affinity), with the same tolerations and node affinity, and the same status
// counts; with hostNetwork too, which also tolerates network-unavailable. Nobody runs the pods:
// the test looks only at where they are.
func TestDaemonSetNodeEligibilityAsBuiltin(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "ds-elig")
	nodes := createEligNodes(ctx, t, f, ns)

	t.Cleanup(func() {
		// Pods bound to kubelet-less nodes never finish terminating by themselves: delete
		// the DaemonSets first, then their pods at once.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, app := range []string{"builtin", "builtin-host"} {
			if err := f.Client.AppsV1().DaemonSets(ns).Delete(ctx, app, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("deleting DaemonSet %s: %v", app, err)
			}
		}
		for _, app := range []string{"kruise", "kruise-host"} {
			if err := kc.AppsV1alpha1().DaemonSets(ns).Delete(ctx, app, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("deleting DaemonSet %s: %v", app, err)
			}
		}
		err := f.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		if err != nil {
			t.Logf("deleting the pods: %v", err)
		}
	})

	for _, host := range []bool{false, true} {
		builtinName, kruiseName := "builtin", "kruise"
		if host {
			builtinName, kruiseName = "builtin-host", "kruise-host"
		}
		builtin := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: builtinName, Namespace: ns},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": builtinName}},
				Template: eligTemplate(f, ns, builtinName, host),
			},
		}
		if _, err := f.Client.AppsV1().DaemonSets(ns).Create(ctx, builtin, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating DaemonSet %s: %v", builtinName, err)
		}
		advanced := &appsv1alpha1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: kruiseName, Namespace: ns},
			Spec: appsv1alpha1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": kruiseName}},
				Template: eligTemplate(f, ns, kruiseName, host),
			},
		}
		if _, err := kc.AppsV1alpha1().DaemonSets(ns).Create(ctx, advanced, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating DaemonSet %s: %v", kruiseName, err)
		}
	}

	for _, host := range []bool{false, true} {
		builtinName, kruiseName := "builtin", "kruise"
		if host {
			builtinName, kruiseName = "builtin-host", "kruise-host"
		}
		want, got := eligPods(ctx, t, f, ns, builtinName, func(ctx context.Context) (eligCounts, bool, error) {
			ds, err := f.Client.AppsV1().DaemonSets(ns).Get(ctx, builtinName, metav1.GetOptions{})
			if err != nil {
				return eligCounts{}, false, err
			}
			s := ds.Status
			return eligCounts{s.DesiredNumberScheduled, s.CurrentNumberScheduled, s.NumberMisscheduled}, s.ObservedGeneration == ds.Generation, nil
		})
		have, counts := eligPods(ctx, t, f, ns, kruiseName, func(ctx context.Context) (eligCounts, bool, error) {
			ds, err := kc.AppsV1alpha1().DaemonSets(ns).Get(ctx, kruiseName, metav1.GetOptions{})
			if err != nil {
				return eligCounts{}, false, err
			}
			s := ds.Status
			return eligCounts{s.DesiredNumberScheduled, s.CurrentNumberScheduled, s.NumberMisscheduled}, s.ObservedGeneration == ds.Generation, nil
		})
		t.Logf("hostNetwork %v: built-in %+v on %v; kruise %+v on %v", host, got, slices.Sorted(maps.Keys(want)), counts, slices.Sorted(maps.Keys(have)))
		compareEligPods(t, nodes, host, want, have)
		if got != counts {
			t.Errorf("hostNetwork %v: status counts: built-in %+v, kruise %+v", host, got, counts)
		}
	}
}

// compareEligPods checks that both controllers put pods on the same nodes, with the same
// tolerations and node affinity, and that those are the nodes the case table expects.
func compareEligPods(t *testing.T, nodes map[string]string, host bool, builtin, kruise map[string]*corev1.Pod) {
	t.Helper()
	var expected []string
	for _, c := range eligNodes {
		if (host && c.hostPod) || (!host && c.pod) {
			expected = append(expected, nodes[c.suffix])
		}
	}
	slices.Sort(expected)
	want, got := slices.Sorted(maps.Keys(builtin)), slices.Sorted(maps.Keys(kruise))
	if !slices.Equal(want, got) {
		t.Errorf("hostNetwork %v: pods on nodes\n built-in %v\n kruise   %v", host, want, got)
	}
	if !slices.Equal(expected, want) {
		t.Errorf("hostNetwork %v: the built-in controller put pods on %v, the case table expects %v", host, want, expected)
	}
	for node, b := range builtin {
		k := kruise[node]
		if k == nil {
			continue
		}
		if !slices.EqualFunc(b.Spec.Tolerations, k.Spec.Tolerations, tolerationEqual) {
			t.Errorf("hostNetwork %v: tolerations of the pods on %s:\n built-in %s\n kruise   %s", host, node,
				describeTolerations(b.Spec.Tolerations), describeTolerations(k.Spec.Tolerations))
		}
		bj, _ := json.Marshal(b.Spec.Affinity)
		kj, _ := json.Marshal(k.Spec.Affinity)
		if string(bj) != string(kj) {
			t.Errorf("hostNetwork %v: node affinity of the pods on %s:\n built-in %s\n kruise   %s", host, node, bj, kj)
		}
	}
}

func tolerationEqual(a, b corev1.Toleration) bool {
	return a.MatchToleration(&b) && ptr.Equal(a.TolerationSeconds, b.TolerationSeconds)
}

func describeTolerations(ts []corev1.Toleration) string {
	var out []string
	for _, t := range ts {
		s := fmt.Sprintf("%s %s %s:%s", t.Key, t.Operator, t.Value, t.Effect)
		if t.TolerationSeconds != nil {
			s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
		}
		out = append(out, s)
	}
	return "[" + strings.Join(out, ", ") + "]"
}
