package v1alpha1

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsAdmitted reports whether kruise-controller has admitted the request:
// its status carries the Admitted condition as True (only the controller
// writes it, through the status subresource), or (a request admitted by a
// kruise release older than that condition) a daemon has already moved it
// to Recreating, which daemons do only after admission. Labels, annotations
// and the spec's per-container context prove nothing: a request's creator
// may write them.
func IsAdmitted(crr *ContainerRecreateRequest) bool {
	if meta.IsStatusConditionTrue(crr.Status.Conditions, ContainerRecreateRequestAdmitted) {
		return true
	}
	return crr.Status.Phase == ContainerRecreateRequestRecreating && meta.FindStatusCondition(crr.Status.Conditions, ContainerRecreateRequestAdmitted) == nil
}

// IsRouted reports whether the request carries what admission writes into
// its metadata and spec: both routing labels and every container's
// statusContext. Admission writes these after the Admitted condition, so
// an admitted request may briefly lack them.
func IsRouted(crr *ContainerRecreateRequest) bool {
	if crr.Labels[ContainerRecreateRequestPodUIDKey] == "" || crr.Labels[ContainerRecreateRequestNodeNameKey] == "" {
		return false
	}
	for _, c := range crr.Spec.Containers {
		if c.StatusContext == nil {
			return false
		}
	}
	return true
}

// CreatedBefore orders the requests of one pod by creation: the creation
// timestamp (one-second resolution), then the creation revision recorded
// by kruise-controller, then the name. A request without a recorded
// revision sorts after one with it in the same second.
func CreatedBefore(a, b *ContainerRecreateRequest) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	ra, okA := revision(a.Status.CreationRevision)
	rb, okB := revision(b.Status.CreationRevision)
	switch {
	case okA && okB && ra != rb:
		return ra < rb
	case okA != okB:
		return okA
	}
	return a.Name < b.Name
}

// revision reads a resourceVersion as the number the API server's etcd
// storage makes it (Kubernetes 1.35 documents them as comparable; every
// earlier release already issues them so). Anything else is not ordered.
func revision(rv string) (uint64, bool) {
	if rv == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	return n, err == nil
}

// AdmittedCondition returns the Admitted condition, or nil.
func AdmittedCondition(crr *ContainerRecreateRequest) *metav1.Condition {
	return meta.FindStatusCondition(crr.Status.Conditions, ContainerRecreateRequestAdmitted)
}

// ContainerStatusSnapshot is status.containerStatusSnapshot as OpenKruise's
// v1beta1 means it: for each container of the request, in spec order, the
// pod's status of its instance running now, if that instance started no
// earlier than the request was created (a recreated container, or one that
// restarted since); nil when there is none. kruise writes it when the
// request completes.
func ContainerStatusSnapshot(crr *ContainerRecreateRequest, pod *corev1.Pod) []ContainerRecreateRequestSyncContainerStatus {
	var out []ContainerRecreateRequestSyncContainerStatus
	for _, ctr := range crr.Spec.Containers {
		for _, st := range pod.Status.ContainerStatuses {
			if st.Name != ctr.Name || st.State.Running == nil || st.State.Running.StartedAt.Before(&crr.CreationTimestamp) {
				continue
			}
			out = append(out, ContainerRecreateRequestSyncContainerStatus{
				Name: st.Name, Ready: st.Ready, RestartCount: st.RestartCount, ContainerID: st.ContainerID,
			})
		}
	}
	return out
}
