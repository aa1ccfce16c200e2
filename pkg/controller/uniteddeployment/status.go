package uniteddeployment

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// setCondition sets a UnitedDeployment condition the reference's way: unchanged when status and
// reason stay (message included), the transition time kept when only the reason changes.
func setCondition(st *appsv1alpha1.UnitedDeploymentStatus, t appsv1alpha1.UnitedDeploymentConditionType,
	status corev1.ConditionStatus, reason, message string, now time.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status == status && c.Reason == reason {
			return
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message = status, reason, message
		return
	}
	st.Conditions = append(st.Conditions, appsv1alpha1.UnitedDeploymentCondition{
		Type: t, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now),
	})
}

func removeCondition(st *appsv1alpha1.UnitedDeploymentStatus, t appsv1alpha1.UnitedDeploymentConditionType) {
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c appsv1alpha1.UnitedDeploymentCondition) bool { return c.Type == t })
}

func getCondition(st *appsv1alpha1.UnitedDeploymentStatus, t appsv1alpha1.UnitedDeploymentConditionType) *appsv1alpha1.UnitedDeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// syncSubsetStatuses keeps one status per subset of the topology, in its order: new subsets get
// an empty one (under reservation, once there were subsets, marked unschedulable with reason
// "created" so that they take replicas only after a look), removed ones lose theirs.
func syncSubsetStatuses(ud *appsv1alpha1.UnitedDeployment, st *appsv1alpha1.UnitedDeploymentStatus, now time.Time) {
	had := len(st.SubsetStatuses) > 0
	out := make([]appsv1alpha1.UnitedDeploymentSubsetStatus, 0, len(ud.Spec.Topology.Subsets))
	for _, s := range ud.Spec.Topology.Subsets {
		if old := st.GetSubsetStatus(s.Name); old != nil {
			out = append(out, *old)
			continue
		}
		ss := appsv1alpha1.UnitedDeploymentSubsetStatus{Name: s.Name}
		if had && ud.Spec.Topology.ScheduleStrategy.ShouldReserveUnschedulablePods() {
			ss.SetCondition(appsv1alpha1.UnitedDeploymentSubsetSchedulable, corev1.ConditionFalse, reasonCreated,
				"newly-created subsets in reservation strategy", metav1.NewTime(now))
		}
		out = append(out, ss)
	}
	st.SubsetStatuses = out
}

// setUpdatedCondition is UnitedDeploymentUpdated: True once the current revision is the update
// revision.
func setUpdatedCondition(st *appsv1alpha1.UnitedDeploymentStatus, current, update string, now time.Time) {
	if current != update {
		setCondition(st, appsv1alpha1.UnitedDeploymentUpdated, corev1.ConditionFalse, "UnitedDeploymentRevisionUpdating",
			fmt.Sprintf("updating to revision %s", update), now)
		return
	}
	setCondition(st, appsv1alpha1.UnitedDeploymentUpdated, corev1.ConditionTrue, "UnitedDeploymentRevisionUpdated",
		fmt.Sprintf("updated to revision %s", update), now)
}

// partitions are each subset's partition: manualUpdate.partitions[subset] capped at the replicas
// it was given, 0 when unset.
func partitions(ud *appsv1alpha1.UnitedDeployment, next map[string]int32) map[string]int32 {
	out := make(map[string]int32, len(ud.Spec.Topology.Subsets))
	for _, s := range ud.Spec.Topology.Subsets {
		var p int32
		if mu := ud.Spec.UpdateStrategy.ManualUpdate; mu != nil && (ud.Spec.UpdateStrategy.Type == appsv1alpha1.ManualUpdateStrategyType || ud.Spec.UpdateStrategy.Type == "") {
			p = mu.Partitions[s.Name]
		}
		if n, ok := next[s.Name]; ok && p > n {
			p = n
		}
		out[s.Name] = max(p, 0)
	}
	return out
}

// counts are a subset's pods of the update revision: all active ones, and the Ready of them.
func counts(pods []*corev1.Pod, update string) (updated, updatedReady int32) {
	for _, p := range pods {
		if p.Labels[RevisionLabel] != update || p.DeletionTimestamp != nil ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		updated++
		if c := podCondition(p, corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
			updatedReady++
		}
	}
	return updated, updatedReady
}

// totals fills the replica counts, the subsets' statuses, subsetReplicas, updateStatus, the
// current revision (the update revision once its Ready pods reach the replicas) and
// SubsetFailure from the kept workloads.
func totals(st *appsv1alpha1.UnitedDeploymentStatus, kept map[string]existing, reserved map[string]int32,
	next, parts map[string]int32, current, update string, now time.Time) {
	st.Replicas, st.ReservedPods, st.ReadyReplicas, st.UpdatedReplicas, st.UpdatedReadyReplicas = 0, 0, 0, 0, 0
	for i := range st.SubsetStatuses {
		ss := &st.SubsetStatuses[i]
		ss.Partition = parts[ss.Name]
		e, ok := kept[ss.Name]
		if !ok {
			ss.Replicas, ss.ReadyReplicas, ss.ReservedPods = 0, 0, 0
			continue
		}
		updated, updatedReady := counts(e.pods, update)
		st.Replicas += e.statusReplicas - reserved[ss.Name]
		st.ReservedPods += reserved[ss.Name]
		st.ReadyReplicas += e.ready
		st.UpdatedReplicas += updated
		st.UpdatedReadyReplicas += updatedReady
		ss.Replicas, ss.ReadyReplicas, ss.ReservedPods = e.statusReplicas, e.ready, reserved[ss.Name]
	}
	st.SubsetReplicas = maps.Clone(next)
	if st.CurrentRevision == "" {
		st.CurrentRevision = current
	}
	st.UpdateStatus = &appsv1alpha1.UpdateStatus{UpdatedRevision: update, CurrentPartitions: maps.Clone(parts)}
	if update != st.CurrentRevision && st.UpdatedReadyReplicas >= st.Replicas {
		st.CurrentRevision = update
	}
	failure := ""
	for _, s := range st.SubsetStatuses {
		if e, ok := kept[s.Name]; ok {
			if failure = e.failure(); failure != "" {
				break
			}
		}
	}
	if failure == "" {
		removeCondition(st, appsv1alpha1.SubsetFailure)
	} else {
		setCondition(st, appsv1alpha1.SubsetFailure, corev1.ConditionTrue, "Error", failure, now)
	}
}
