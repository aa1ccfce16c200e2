//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The WorkloadSpread tests spread real pod objects of a CloneSet or a Deployment over simulated
// nodes (framework.SimNodes) labelled as zones and pools; kwok runs them.

const (
	// wsTimeout bounds each step: creating, scaling or updating a few pods on simulated nodes.
	wsTimeout = 3 * time.Minute
	// wsPoolLabel is the node label of the tests' pools (the zone is topology.kubernetes.io/zone).
	wsPoolLabel = "e2e.kruise.io/pool"
)

// spreadKinds are the workloads every WorkloadSpread test runs on.
var spreadKinds = []string{"CloneSet", "Deployment"}

// spreadWorkload is the CloneSet or Deployment a test spreads, labelled app=<name>.
type spreadWorkload struct {
	kind, ns, name string
	f              *framework.Framework
	kc             versioned.Interface
}

// newSpreadWorkload creates a CloneSet (update strategy ReCreate with maxSurge 1: kwok cannot
// restart containers with another image in place for real) or a Deployment (RollingUpdate,
// maxSurge 1, maxUnavailable 0) of replicas busybox pods with a one-second grace period.
func newSpreadWorkload(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, kind, ns, name string, replicas int32) *spreadWorkload {
	t.Helper()
	w := &spreadWorkload{kind: kind, ns: ns, name: name, f: f, kc: kc}
	labels := map[string]string{"app": name}
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "main", Image: f.Image("public/busybox:1.35"), Command: []string{"sh", "-c", framework.EmptySidecarScript},
				Env: []corev1.EnvVar{{Name: "ROLLOUT", Value: "1"}},
			}},
		},
	}
	var err error
	switch kind {
	case "CloneSet":
		_, err = kc.AppsV1alpha1().CloneSets(ns).Create(ctx, &appsv1alpha1.CloneSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appsv1alpha1.CloneSetSpec{
				Replicas: ptr.To(replicas),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: tpl,
				UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{
					Type:           appsv1alpha1.RecreateCloneSetUpdateStrategyType,
					MaxSurge:       ptr.To(intstr.FromInt32(1)),
					MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				},
			},
		}, metav1.CreateOptions{})
	case "Deployment":
		_, err = f.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(replicas),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: tpl,
				Strategy: appsv1.DeploymentStrategy{
					Type: appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{
						MaxSurge:       ptr.To(intstr.FromInt32(1)),
						MaxUnavailable: ptr.To(intstr.FromInt32(0)),
					},
				},
			},
		}, metav1.CreateOptions{})
	default:
		t.Fatalf("unknown workload kind %s", kind)
	}
	if err != nil {
		t.Fatalf("creating %s %s: %v", kind, name, err)
	}
	return w
}

// ref is the WorkloadSpread's targetRef to the workload.
func (w *spreadWorkload) ref() *appsv1alpha1.TargetReference {
	if w.kind == "CloneSet" {
		return &appsv1alpha1.TargetReference{APIVersion: appsv1alpha1.SchemeGroupVersion.String(), Kind: "CloneSet", Name: w.name}
	}
	return &appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: w.name}
}

// patch applies a merge patch to the workload's spec.
func (w *spreadWorkload) patch(ctx context.Context, t *testing.T, what, patch string) {
	t.Helper()
	var err error
	if w.kind == "CloneSet" {
		_, err = w.kc.AppsV1alpha1().CloneSets(w.ns).Patch(ctx, w.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	} else {
		_, err = w.f.Client.AppsV1().Deployments(w.ns).Patch(ctx, w.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
	if err != nil {
		t.Fatalf("%s %s %s: %v", what, w.kind, w.name, err)
	}
}

// scale sets spec.replicas.
func (w *spreadWorkload) scale(ctx context.Context, t *testing.T, n int32) {
	t.Helper()
	w.patch(ctx, t, fmt.Sprintf("scaling to %d", n), fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
}

// rollout changes the pod template (env ROLLOUT=value): every pod is replaced, one surge pod at
// a time.
func (w *spreadWorkload) rollout(ctx context.Context, t *testing.T, value string) {
	t.Helper()
	w.patch(ctx, t, "updating", fmt.Sprintf(
		`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":%q,"command":["sh","-c",%q],"env":[{"name":"ROLLOUT","value":%q}]}]}}}}`,
		w.f.Image("public/busybox:1.35"), framework.EmptySidecarScript, value))
}

// settled reports whether the workload's status says n pods, all of the latest revision and
// available, and what it saw.
func (w *spreadWorkload) settled(ctx context.Context, n int32) (bool, string, error) {
	if w.kind == "CloneSet" {
		cs, err := w.kc.AppsV1alpha1().CloneSets(w.ns).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := cs.Status
		return s.ObservedGeneration == cs.Generation && s.Replicas == n && s.UpdatedReplicas == n &&
				s.AvailableReplicas == n && s.UpdatedAvailableReplicas == n && s.CurrentRevision == s.UpdateRevision,
			fmt.Sprintf("CloneSet replicas %d updated %d available %d", s.Replicas, s.UpdatedReplicas, s.AvailableReplicas), nil
	}
	d, err := w.f.Client.AppsV1().Deployments(w.ns).Get(ctx, w.name, metav1.GetOptions{})
	if err != nil {
		return false, "", err
	}
	s := d.Status
	return s.ObservedGeneration == d.Generation && s.Replicas == n && s.UpdatedReplicas == n && s.AvailableReplicas == n,
		fmt.Sprintf("Deployment replicas %d updated %d available %d", s.Replicas, s.UpdatedReplicas, s.AvailableReplicas), nil
}

// pods lists the workload's pods that are not being deleted.
func (w *spreadWorkload) pods(ctx context.Context) ([]corev1.Pod, error) {
	list, err := w.f.Client.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + w.name})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// spreadSubset is one subset of a test's WorkloadSpread: the node label value it requires (key
// given to newWorkloadSpread) and its maxReplicas (nil: unlimited).
type spreadSubset struct {
	name, value string
	max         *intstr.IntOrString
}

// newWorkloadSpread creates the WorkloadSpread named name over the workload: each subset requires
// nodes whose label key has the subset's value and tolerates the simulated nodes' taint.
func newWorkloadSpread(ctx context.Context, t *testing.T, kc versioned.Interface, w *spreadWorkload, name, key string,
	subsets []spreadSubset, strategy appsv1alpha1.WorkloadSpreadScheduleStrategy) *appsv1alpha1.WorkloadSpread {
	t.Helper()
	ws := &appsv1alpha1.WorkloadSpread{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Spec:       appsv1alpha1.WorkloadSpreadSpec{TargetReference: w.ref(), ScheduleStrategy: strategy},
	}
	for _, s := range subsets {
		ws.Spec.Subsets = append(ws.Spec.Subsets, appsv1alpha1.WorkloadSpreadSubset{
			Name: s.name,
			RequiredNodeSelectorTerm: &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{s.value},
			}}},
			Tolerations: []corev1.Toleration{framework.SimNodeToleration()},
			MaxReplicas: s.max,
		})
	}
	created, err := kc.AppsV1alpha1().WorkloadSpreads(w.ns).Create(ctx, ws, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating WorkloadSpread %s: %v", name, err)
	}
	return created
}

// spreadView is what one check of a spread saw.
type spreadView struct {
	pods []corev1.Pod
	// bySubset counts the running and ready pods per subset of the pods' annotation.
	bySubset map[string]int
	// nodeValue is each pod's node's value of the subsets' label, by pod name.
	nodeValue map[string]string
	ws        *appsv1alpha1.WorkloadSpread
}

// matchedSubset decodes the pod's apps.kruise.io/matched-workloadspread annotation.
func matchedSubset(pod *corev1.Pod) (*appsv1alpha1.InjectWorkloadSpread, error) {
	raw, ok := pod.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation]
	if !ok {
		return nil, nil
	}
	var m appsv1alpha1.InjectWorkloadSpread
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("pod %s: annotation %s=%q: %w", pod.Name, appsv1alpha1.MatchedWorkloadSpreadAnnotation, raw, err)
	}
	return &m, nil
}

// observeSpread reads the workload's pods, their nodes' label key and the WorkloadSpread.
func observeSpread(ctx context.Context, f *framework.Framework, kc versioned.Interface, w *spreadWorkload, wsName, key string) (*spreadView, error) {
	pods, err := w.pods(ctx)
	if err != nil {
		return nil, err
	}
	var nodes []string
	for _, p := range pods {
		nodes = append(nodes, p.Spec.NodeName)
	}
	values, err := f.NodeLabelsOf(ctx, key, nodes...)
	if err != nil {
		return nil, err
	}
	v := &spreadView{pods: pods, bySubset: map[string]int{}, nodeValue: map[string]string{}}
	for i := range pods {
		p := &pods[i]
		v.nodeValue[p.Name] = values[p.Spec.NodeName]
		m, err := matchedSubset(p)
		if err != nil {
			return nil, err
		}
		if m != nil && m.Name == wsName && p.Status.Phase == corev1.PodRunning && framework.PodReady(p) {
			v.bySubset[m.Subset]++
		}
	}
	if v.ws, err = kc.AppsV1alpha1().WorkloadSpreads(w.ns).Get(ctx, wsName, metav1.GetOptions{}); err != nil {
		return nil, err
	}
	return v, nil
}

// describe is one line per check: pods per subset, the status's subsets, the pods' nodes.
func (v *spreadView) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ready pods by subset %v; status:", v.bySubset)
	for _, s := range v.ws.Status.SubsetStatuses {
		fmt.Fprintf(&b, " %s{replicas %d missing %d creating %d deleting %d", s.Name, s.Replicas, s.MissingReplicas, len(s.CreatingPods), len(s.DeletingPods))
		for _, c := range s.Conditions {
			fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
		}
		b.WriteString("}")
	}
	b.WriteString("; pods:")
	names := make([]string, 0, len(v.pods))
	for _, p := range v.pods {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	for _, n := range names {
		for i := range v.pods {
			if p := &v.pods[i]; p.Name == n {
				m, _ := matchedSubset(p)
				subset := "-"
				if m != nil {
					subset = m.Subset
				}
				fmt.Fprintf(&b, " %s(%s/%s on %s=%q %s)", n, subset, p.Status.Phase, p.Spec.NodeName, v.nodeValue[n],
					p.Annotations[appsv1alpha1.PodDeletionCostAnnotation])
			}
		}
	}
	return b.String()
}

// spreadWrong says what in the view contradicts the spread the test expects (want: ready pods
// per subset, every one of the workload's pods matched), or "" when it holds: each pod annotated
// with the WorkloadSpread and a subset, on a node of that subset's label value; the status's subsets count those pods, with maxReplicas-replicas missing (-1
// when unlimited) and no creating or deleting pod left.
func spreadWrong(v *spreadView, wsName string, subsets []spreadSubset, want map[string]int, total int32) string {
	if len(v.pods) != int(total) {
		return fmt.Sprintf("%d pods, want %d", len(v.pods), total)
	}
	value := map[string]string{}
	for _, s := range subsets {
		value[s.name] = s.value
	}
	for i := range v.pods {
		p := &v.pods[i]
		m, err := matchedSubset(p)
		switch {
		case err != nil:
			return err.Error()
		case m == nil:
			return fmt.Sprintf("pod %s has no %s annotation", p.Name, appsv1alpha1.MatchedWorkloadSpreadAnnotation)
		case m.Name != wsName:
			return fmt.Sprintf("pod %s matched WorkloadSpread %q, want %q", p.Name, m.Name, wsName)
		case p.Spec.NodeName == "" || v.nodeValue[p.Name] != value[m.Subset]:
			return fmt.Sprintf("pod %s of subset %s is on node %q (%q)", p.Name, m.Subset, p.Spec.NodeName, v.nodeValue[p.Name])
		}
	}
	if !maps.Equal(v.bySubset, nonZero(want)) {
		return fmt.Sprintf("ready pods by subset %v, want %v", v.bySubset, nonZero(want))
	}
	if v.ws.Status.ObservedGeneration != v.ws.Generation {
		return fmt.Sprintf("status of generation %d, want %d", v.ws.Status.ObservedGeneration, v.ws.Generation)
	}
	if len(v.ws.Status.SubsetStatuses) != len(subsets) {
		return fmt.Sprintf("%d subset statuses, want %d", len(v.ws.Status.SubsetStatuses), len(subsets))
	}
	for i, s := range v.ws.Status.SubsetStatuses {
		sub := subsets[i]
		missing := int32(-1)
		if sub.max != nil {
			max, err := intstr.GetScaledValueFromIntOrPercent(sub.max, int(total), true)
			if err != nil {
				return err.Error()
			}
			missing = int32(max) - int32(want[sub.name])
		}
		switch {
		case s.Name != sub.name:
			return fmt.Sprintf("subset status %d is %q, want %q", i, s.Name, sub.name)
		case s.Replicas != int32(want[sub.name]) || s.MissingReplicas != missing:
			return fmt.Sprintf("subset %s status replicas %d missing %d, want %d and %d", s.Name, s.Replicas, s.MissingReplicas, want[sub.name], missing)
		case len(s.CreatingPods) != 0 || len(s.DeletingPods) != 0:
			return fmt.Sprintf("subset %s still records creating %v deleting %v", s.Name, slices.Collect(maps.Keys(s.CreatingPods)), slices.Collect(maps.Keys(s.DeletingPods)))
		}
	}
	return ""
}

func nonZero(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// waitSpread waits until the workload has settled with total pods spread as want (see
// spreadWrong) and returns the last view.
func waitSpread(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, w *spreadWorkload,
	wsName, key string, subsets []spreadSubset, want map[string]int, total int32) *spreadView {
	t.Helper()
	var last *spreadView
	framework.WaitFor(ctx, t, wsTimeout, fmt.Sprintf("%s %s: %d pods spread %v", w.kind, w.name, total, want), func(ctx context.Context) (bool, string, error) {
		ok, seen, err := w.settled(ctx, total)
		if err != nil || !ok {
			return false, seen, err
		}
		v, err := observeSpread(ctx, f, kc, w, wsName, key)
		if err != nil {
			return false, "", err
		}
		last = v
		if why := spreadWrong(v, wsName, subsets, want, total); why != "" {
			return false, why + "; " + v.describe(), nil
		}
		return true, v.describe(), nil
	})
	return last
}

// fill is where the webhook puts total pods, subset after subset up to each one's maxReplicas
// (a percentage of total rounded up): the spread kept through scaling and updates.
func fill(t *testing.T, subsets []spreadSubset, total int32) map[string]int {
	t.Helper()
	out := map[string]int{}
	left := int(total)
	for _, s := range subsets {
		n := left
		if s.max != nil {
			max, err := intstr.GetScaledValueFromIntOrPercent(s.max, int(total), true)
			if err != nil {
				t.Fatal(err)
			}
			n = min(n, max)
		}
		out[s.name] = n
		left -= n
	}
	if left != 0 {
		t.Fatalf("subsets %v cannot hold %d pods", subsets, total)
	}
	return out
}

// deleteWorkloadSpreadAtEnd deletes the WorkloadSpread when the test ends, before its namespace.
func deleteWorkloadSpreadAtEnd(t *testing.T, kc versioned.Interface, ns, name string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := kc.AppsV1alpha1().WorkloadSpreads(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting WorkloadSpread %s: %v", name, err)
		}
	})
}

// waitInjected waits until a pod of the workload (a server-side dry run of one owned by the
// CloneSet, or by the Deployment's ReplicaSet) comes back with the WorkloadSpread's subset
// annotation: kruise's leader has put the workload in the webhook's scope and the webhook
// answers, so the pods scaling creates are spread.
func waitInjected(ctx context.Context, t *testing.T, f *framework.Framework, w *spreadWorkload, wsName string) {
	t.Helper()
	framework.WaitFor(ctx, t, time.Minute, fmt.Sprintf("a pod of %s %s injected by WorkloadSpread %s", w.kind, w.name, wsName), func(ctx context.Context) (bool, string, error) {
		owner, err := w.podOwner(ctx)
		if err != nil || owner == nil {
			return false, "no owner yet", err
		}
		pod := f.BusyboxPod(w.ns, "", "main")
		pod.GenerateName = w.name + "-probe-"
		pod.Labels = map[string]string{"app": w.name}
		pod.OwnerReferences = []metav1.OwnerReference{*owner}
		got, err := f.Client.CoreV1().Pods(w.ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		m, err := matchedSubset(got)
		if err != nil || m == nil {
			return false, "not injected", err
		}
		return m.Name == wsName, fmt.Sprintf("injected %+v", *m), nil
	})
}

// podOwner is the controller reference the workload's pods carry.
func (w *spreadWorkload) podOwner(ctx context.Context) (*metav1.OwnerReference, error) {
	if w.kind == "CloneSet" {
		cs, err := w.kc.AppsV1alpha1().CloneSets(w.ns).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return metav1.NewControllerRef(cs, appsv1alpha1.SchemeGroupVersion.WithKind("CloneSet")), nil
	}
	list, err := w.f.Client.AppsV1().ReplicaSets(w.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + w.name})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		rs := &list.Items[i]
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Deployment" && ref.Name == w.name {
			return metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")), nil
		}
	}
	return nil, nil
}

// subsetCost is an active pod's subset and deletion cost.
type subsetCost struct {
	subset string
	cost   int
}

// subsetCosts returns each active pod's subset and deletion cost; missing says which pod has no
// subset or no cost yet (then the list is incomplete).
func (v *spreadView) subsetCosts() ([]subsetCost, string, error) {
	var out []subsetCost
	for i := range v.pods {
		p := &v.pods[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		m, err := matchedSubset(p)
		if err != nil {
			return nil, "", err
		}
		raw, ok := p.Annotations[appsv1alpha1.PodDeletionCostAnnotation]
		if m == nil || !ok {
			return nil, fmt.Sprintf("pod %s has no subset or no deletion cost yet; %s", p.Name, v.describe()), nil
		}
		cost, err := strconv.Atoi(raw)
		if err != nil {
			return nil, "", fmt.Errorf("pod %s: deletion cost %q: %w", p.Name, raw, err)
		}
		out = append(out, subsetCost{m.Subset, cost})
	}
	return out, "", nil
}

// waitCostsKeep waits until the deletion costs in place make a scale-in to n keep want (pods by
// subset): every active pod carries controller.kubernetes.io/pod-deletion-cost, and the n dearest
// (all Running and Ready, so the cost is what the workload's controller goes by) are spread as
// want, with no tie at the cut. A scale-in right after a rollout must wait for it, as for
// waitCostsOrdered: the new pods get their costs only once kruise has seen them.
func waitCostsKeep(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, w *spreadWorkload,
	wsName, key string, n int, want map[string]int) {
	t.Helper()
	framework.WaitFor(ctx, t, wsTimeout, fmt.Sprintf("%s %s: deletion costs that keep %v at %d", w.kind, w.name, want, n), func(ctx context.Context) (bool, string, error) {
		v, err := observeSpread(ctx, f, kc, w, wsName, key)
		if err != nil {
			return false, "", err
		}
		pods, missing, err := v.subsetCosts()
		if err != nil || missing != "" {
			return false, missing, err
		}
		if len(pods) < n {
			return false, fmt.Sprintf("%d active pods, want at least %d; %s", len(pods), n, v.describe()), nil
		}
		slices.SortFunc(pods, func(a, b subsetCost) int { return b.cost - a.cost })
		if len(pods) > n && pods[n-1].cost == pods[n].cost {
			return false, fmt.Sprintf("pods %d and %d cost the same (%d); %s", n, n+1, pods[n].cost, v.describe()), nil
		}
		kept := map[string]int{}
		for _, p := range pods[:n] {
			kept[p.subset]++
		}
		for s, c := range want {
			if kept[s] != c {
				return false, fmt.Sprintf("the %d dearest pods are spread %v, want %v; %s", n, kept, want, v.describe()), nil
			}
		}
		return len(kept) <= len(want), fmt.Sprintf("the %d dearest pods are spread %v", n, kept), nil
	})
}

// waitCostsOrdered waits until kruise-controller has written the deletion costs that make a
// scale-in keep the earlier subsets: every pod carries controller.kubernetes.io/pod-deletion-cost
// and each subset's pods cost more than every later subset's. A scale-in right after a rollout
// must wait for it: the workload controller reads the costs of the new pods as they are when it
// deletes, and kruise writes them only once it has seen those pods (as OpenKruise does).
func waitCostsOrdered(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, w *spreadWorkload,
	wsName, key string, subsets []spreadSubset) {
	t.Helper()
	framework.WaitFor(ctx, t, wsTimeout, fmt.Sprintf("%s %s: deletion costs ordered by subset", w.kind, w.name), func(ctx context.Context) (bool, string, error) {
		v, err := observeSpread(ctx, f, kc, w, wsName, key)
		if err != nil {
			return false, "", err
		}
		rank := map[string]int{}
		for i, s := range subsets {
			rank[s.name] = i
		}
		lowest := make([]int, len(subsets))  // per subset, its cheapest pod
		highest := make([]int, len(subsets)) // per subset, its dearest pod
		seen := make([]bool, len(subsets))
		pods, missing, err := v.subsetCosts()
		if err != nil || missing != "" {
			return false, missing, err
		}
		for _, pc := range pods {
			cost := pc.cost
			r, ok := rank[pc.subset]
			if !ok {
				continue
			}
			if !seen[r] || cost < lowest[r] {
				lowest[r] = cost
			}
			if !seen[r] || cost > highest[r] {
				highest[r] = cost
			}
			seen[r] = true
		}
		for i := range subsets {
			for j := i + 1; j < len(subsets); j++ {
				if seen[i] && seen[j] && lowest[i] <= highest[j] {
					return false, fmt.Sprintf("subset %s's pods do not all cost more than %s's; %s", subsets[i].name, subsets[j].name, v.describe()), nil
				}
			}
		}
		return true, v.describe(), nil
	})
}
