package describe

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// workload is what the three kruise workloads share for describing:
// identity, selector, revisions, and their kind-specific lines.
type workload struct {
	kind            string
	meta            metav1.ObjectMeta
	selector        *metav1.LabelSelector
	currentRevision string
	updateRevision  string
	// details are the kind's own lines (replicas, strategy, partition),
	// written after the metadata.
	details func(p *page)
}

// describeWorkload writes the workload's page: details, revisions with
// their pods, the pods' lifecycle and in-place update state, and Events.
func (o *Options) describeWorkload(ctx context.Context, w workload) (string, error) {
	pods, err := o.ownedPods(ctx, w)
	if err != nil {
		return "", err
	}
	revisions, revErr := o.ownedRevisions(ctx, w)
	p := newPage(o.now())
	p.meta(w.meta)
	if s, err := metav1.LabelSelectorAsSelector(w.selector); err == nil {
		p.line(0, "Selector:\t%s", s.String())
	}
	w.details(p)
	p.line(0, "Current Revision:\t%s", orNone(w.currentRevision))
	p.line(0, "Update Revision:\t%s", orNone(w.updateRevision))
	if revErr != nil {
		p.line(0, "Revisions:\t<cannot list: %v>", revErr)
	} else {
		revisionTable(p, w, revisions, pods)
	}
	podTable(p, w, revisions, pods)
	o.events(ctx, p, w.meta.Namespace, w.kind, w.meta.Name, w.meta.UID)
	return p.String(), nil
}

// ownedPods are the pods of the selector that the workload controls.
func (o *Options) ownedPods(ctx context.Context, w workload) ([]corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(w.selector)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s has an invalid selector: %w", strings.ToLower(w.kind), w.meta.Namespace, w.meta.Name, err)
	}
	list, err := o.Kube.CoreV1().Pods(w.meta.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s %s/%s: %w", strings.ToLower(w.kind), w.meta.Namespace, w.meta.Name, err)
	}
	var pods []corev1.Pod
	for _, pod := range list.Items {
		if controlledBy(pod.OwnerReferences, w.meta.UID) {
			pods = append(pods, pod)
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods, nil
}

// ownedRevisions are the workload's ControllerRevisions, newest first.
func (o *Options) ownedRevisions(ctx context.Context, w workload) ([]appsv1.ControllerRevision, error) {
	selector, err := metav1.LabelSelectorAsSelector(w.selector)
	if err != nil {
		return nil, err
	}
	list, err := o.Kube.AppsV1().ControllerRevisions(w.meta.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	var revisions []appsv1.ControllerRevision
	for _, r := range list.Items {
		if controlledBy(r.OwnerReferences, w.meta.UID) {
			revisions = append(revisions, r)
		}
	}
	sort.Slice(revisions, func(i, j int) bool { return revisions[i].Revision > revisions[j].Revision })
	return revisions, nil
}

func controlledBy(refs []metav1.OwnerReference, uid types.UID) bool {
	return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == uid && r.Controller != nil && *r.Controller })
}

// podRevision is the revision a pod's controller-revision-hash label
// names: the revision's name (CloneSet, StatefulSet) or its hash suffix
// (DaemonSet).
func podRevision(pod corev1.Pod, revisions []appsv1.ControllerRevision) string {
	v := pod.Labels[appsv1.ControllerRevisionHashLabelKey]
	for _, r := range revisions {
		if r.Name == v || strings.HasSuffix(r.Name, "-"+v) {
			return r.Name
		}
	}
	return v
}

// revisionTable lists the ControllerRevisions with their number, role and
// how many pods run each.
func revisionTable(p *page, w workload, revisions []appsv1.ControllerRevision, pods []corev1.Pod) {
	counts := map[string]int{}
	for _, pod := range pods {
		counts[podRevision(pod, revisions)]++
	}
	p.line(0, "Revisions:")
	if len(revisions) == 0 {
		p.line(1, "<none>")
		return
	}
	p.line(1, "Revision\tName\tRole\tPods\tAge")
	p.line(1, "--------\t----\t----\t----\t---")
	for _, r := range revisions {
		p.line(1, "%d\t%s\t%s\t%d\t%s", r.Revision, r.Name, role(w, r.Name), counts[r.Name], p.age(r.CreationTimestamp))
	}
}

func role(w workload, revision string) string {
	var roles []string
	if revision == w.currentRevision {
		roles = append(roles, "current")
	}
	if revision == w.updateRevision || strings.HasSuffix(revision, "-"+w.updateRevision) {
		roles = append(roles, "update")
	}
	if len(roles) == 0 {
		return "-"
	}
	return strings.Join(roles, ",")
}

// podTable lists the pods: revision, readiness, lifecycle state (a pod
// held by a hook shows the hook's state), and any in-place update.
func podTable(p *page, w workload, revisions []appsv1.ControllerRevision, pods []corev1.Pod) {
	p.line(0, "Pods:")
	if len(pods) == 0 {
		p.line(1, "<none>")
		return
	}
	p.line(1, "Name\tRevision\tReady\tLifecycle\tIn-Place Update")
	p.line(1, "----\t--------\t-----\t---------\t---------------")
	var held []string
	for _, pod := range pods {
		revision := podRevision(pod, revisions)
		if r := role(w, revision); r != "-" {
			revision += " (" + r + ")"
		}
		state := orNone(pod.Labels[pub.LifecycleStateKey])
		switch pub.LifecycleStateType(state) {
		case pub.LifecycleStatePreparingNormal, pub.LifecycleStatePreparingUpdate, pub.LifecycleStatePreparingDelete, pub.LifecycleStateUpdated:
			held = append(held, pod.Name+" ("+state+")")
		}
		p.line(1, "%s\t%s\t%s\t%s\t%s", pod.Name, revision, ready(pod), state, p.inPlaceUpdate(pod))
	}
	if len(held) > 0 {
		// A line of its own, so that the list does not widen the table.
		p.line(0, "Waiting On Lifecycle Hooks:")
		for _, h := range held {
			p.line(1, "%s", h)
		}
	}
}

// ready is the pod's ready containers over its containers.
func ready(pod corev1.Pod) string {
	n := 0
	for _, s := range pod.Status.ContainerStatuses {
		if s.Ready {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, len(pod.Spec.Containers))
}

// inPlaceUpdate summarises the pod's apps.kruise.io/inplace-update-state
// annotation: the revision it is updated to, when, and the container
// batches still to go (an update done in several steps).
func (p *page) inPlaceUpdate(pod corev1.Pod) string {
	raw := pod.Annotations[pub.InPlaceUpdateStateKey]
	if raw == "" {
		return "-"
	}
	var state pub.InPlaceUpdateState
	if err := json.Unmarshal([]byte(raw), &state); err != nil {
		return "<unreadable state>"
	}
	parts := []string{fmt.Sprintf("to %s %s ago", state.Revision, p.age(state.UpdateTimestamp))}
	if n := len(state.ContainerBatchesRecord); n > 0 {
		last := state.ContainerBatchesRecord[n-1]
		parts = append(parts, fmt.Sprintf("batch %d: %s", n, strings.Join(last.Containers, ",")))
	}
	if len(state.NextContainerImages) > 0 {
		var next []string
		for c := range state.NextContainerImages {
			next = append(next, c)
		}
		sort.Strings(next)
		parts = append(parts, "next: "+strings.Join(next, ","))
	}
	if c, done := inPlaceReady(pod); !done {
		if c != nil && c.Reason == pub.InPlaceUpdateRestartingReason {
			parts = append(parts, "containers restarting")
		} else {
			parts = append(parts, "not ready yet")
		}
	}
	return strings.Join(parts, ", ")
}

// inPlaceReady is the pod's InPlaceUpdateReady condition, and whether it
// says the update is done: True with no ContainersRestarting reason (a pod
// without the condition counts as done).
func inPlaceReady(pod corev1.Pod) (*corev1.PodCondition, bool) {
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == pub.InPlaceUpdateReady {
			return c, c.Status == corev1.ConditionTrue && c.Reason != pub.InPlaceUpdateRestartingReason
		}
	}
	return nil, true
}
