package v1alpha1

import (
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// ContainerRecreateRequest converts field for field: kruise's two versions
// have the same fields (v1alpha1 carries v1beta1's containerStatusSnapshot
// and conditions as extensions), so the API server's conversion strategy
// None, which rewrites apiVersion alone, loses nothing either. OpenKruise's
// webhook instead moves two annotations of its v1alpha1 into v1beta1's
// status; kruise writes both forms of what it records (the unready-acquired
// annotation and the PreRecreateGrace condition), so clients of either
// version find what they look for.

// ContainerRecreateRequestToV1beta1 converts a v1alpha1 request to v1beta1.
// The result shares no memory with in.
func ContainerRecreateRequestToV1beta1(in *ContainerRecreateRequest) *v1beta1.ContainerRecreateRequest {
	c := in.DeepCopy()
	out := &v1beta1.ContainerRecreateRequest{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = v1beta1.SchemeGroupVersion.String(), "ContainerRecreateRequest"
	out.Spec = v1beta1.ContainerRecreateRequestSpec{
		PodName: c.Spec.PodName, ActiveDeadlineSeconds: c.Spec.ActiveDeadlineSeconds, TTLSecondsAfterFinished: c.Spec.TTLSecondsAfterFinished,
	}
	if c.Spec.Containers != nil {
		out.Spec.Containers = make([]v1beta1.ContainerRecreateRequestContainer, len(c.Spec.Containers))
		for i, ctr := range c.Spec.Containers {
			out.Spec.Containers[i] = v1beta1.ContainerRecreateRequestContainer{
				Name: ctr.Name, Ports: ctr.Ports,
				StatusContext: (*v1beta1.ContainerRecreateRequestContainerContext)(ctr.StatusContext),
				PreStop:       (*v1beta1.CRRProbeHandler)(ctr.PreStop),
			}
		}
	}
	if s := c.Spec.Strategy; s != nil {
		out.Spec.Strategy = &v1beta1.ContainerRecreateRequestStrategy{
			FailurePolicy:   v1beta1.ContainerRecreateRequestFailurePolicyType(s.FailurePolicy),
			OrderedRecreate: s.OrderedRecreate, ForceRecreate: s.ForceRecreate,
			TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds, UnreadyGracePeriodSeconds: s.UnreadyGracePeriodSeconds,
			MinStartedSeconds: s.MinStartedSeconds,
		}
	}
	out.Status = v1beta1.ContainerRecreateRequestStatus{
		Phase:          v1beta1.ContainerRecreateRequestPhase(c.Status.Phase),
		CompletionTime: c.Status.CompletionTime, Message: c.Status.Message,
		Conditions: c.Status.Conditions, CreationRevision: c.Status.CreationRevision,
	}
	if c.Status.ContainerRecreateStates != nil {
		out.Status.ContainerRecreateStates = make([]v1beta1.ContainerRecreateRequestContainerRecreateState, len(c.Status.ContainerRecreateStates))
		for i, st := range c.Status.ContainerRecreateStates {
			out.Status.ContainerRecreateStates[i] = v1beta1.ContainerRecreateRequestContainerRecreateState{
				Name: st.Name, Phase: v1beta1.ContainerRecreateRequestPhase(st.Phase), Message: st.Message, IsKilled: st.IsKilled,
			}
		}
	}
	if c.Status.ContainerStatusSnapshot != nil {
		out.Status.ContainerStatusSnapshot = make([]v1beta1.ContainerRecreateRequestSyncContainerStatus, len(c.Status.ContainerStatusSnapshot))
		for i, st := range c.Status.ContainerStatusSnapshot {
			out.Status.ContainerStatusSnapshot[i] = v1beta1.ContainerRecreateRequestSyncContainerStatus(st)
		}
	}
	return out
}

// ContainerRecreateRequestFromV1beta1 converts a v1beta1 request to v1alpha1.
// The result shares no memory with in.
func ContainerRecreateRequestFromV1beta1(in *v1beta1.ContainerRecreateRequest) *ContainerRecreateRequest {
	c := in.DeepCopy()
	out := &ContainerRecreateRequest{ObjectMeta: c.ObjectMeta}
	out.APIVersion, out.Kind = SchemeGroupVersion.String(), "ContainerRecreateRequest"
	out.Spec = ContainerRecreateRequestSpec{
		PodName: c.Spec.PodName, ActiveDeadlineSeconds: c.Spec.ActiveDeadlineSeconds, TTLSecondsAfterFinished: c.Spec.TTLSecondsAfterFinished,
	}
	if c.Spec.Containers != nil {
		out.Spec.Containers = make([]ContainerRecreateRequestContainer, len(c.Spec.Containers))
		for i, ctr := range c.Spec.Containers {
			out.Spec.Containers[i] = ContainerRecreateRequestContainer{
				Name: ctr.Name, Ports: ctr.Ports,
				StatusContext: (*ContainerRecreateRequestContainerContext)(ctr.StatusContext),
				PreStop:       (*ProbeHandler)(ctr.PreStop),
			}
		}
	}
	if s := c.Spec.Strategy; s != nil {
		out.Spec.Strategy = &ContainerRecreateRequestStrategy{
			FailurePolicy:   ContainerRecreateRequestFailurePolicyType(s.FailurePolicy),
			OrderedRecreate: s.OrderedRecreate, ForceRecreate: s.ForceRecreate,
			TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds, UnreadyGracePeriodSeconds: s.UnreadyGracePeriodSeconds,
			MinStartedSeconds: s.MinStartedSeconds,
		}
	}
	out.Status = ContainerRecreateRequestStatus{
		Phase:          ContainerRecreateRequestPhase(c.Status.Phase),
		CompletionTime: c.Status.CompletionTime, Message: c.Status.Message,
		Conditions: c.Status.Conditions, CreationRevision: c.Status.CreationRevision,
	}
	if c.Status.ContainerRecreateStates != nil {
		out.Status.ContainerRecreateStates = make([]ContainerRecreateRequestContainerRecreateState, len(c.Status.ContainerRecreateStates))
		for i, st := range c.Status.ContainerRecreateStates {
			out.Status.ContainerRecreateStates[i] = ContainerRecreateRequestContainerRecreateState{
				Name: st.Name, Phase: ContainerRecreateRequestPhase(st.Phase), Message: st.Message, IsKilled: st.IsKilled,
			}
		}
	}
	if c.Status.ContainerStatusSnapshot != nil {
		out.Status.ContainerStatusSnapshot = make([]ContainerRecreateRequestSyncContainerStatus, len(c.Status.ContainerStatusSnapshot))
		for i, st := range c.Status.ContainerStatusSnapshot {
			out.Status.ContainerStatusSnapshot[i] = ContainerRecreateRequestSyncContainerStatus(st)
		}
	}
	return out
}
