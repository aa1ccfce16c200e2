package crrexec

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// action is what to do next about one container.
type action int

const (
	// actWait: the container is being recreated; look again on the next pod
	// event, or after decision.after.
	actWait action = iota
	// actKill: stop instance decision.id (preStop first).
	actKill
	// actSucceed: the container is recreated.
	actSucceed
	// actFail: it cannot be recreated, decision.reason says why.
	actFail
	// actKilled: this daemon's kill of the container finished: record it.
	actKilled
	// actCancelled: the kill stopped because the CRR's work was cancelled.
	actCancelled
	// actRuntimeGone: the runtime went away during the kill.
	actRuntimeGone
)

type decision struct {
	action action
	id     string        // actKill: bare CRI ID to stop
	after  time.Duration // actWait: when to look again (0: on the next event)
	reason string        // actFail
}

// decide works out the next step for one container from the runtime's
// view, the pod's status and the container's recorded state. It is
// recomputed from scratch on every sync, which is what makes a restarted
// daemon finish a CRR without stopping a container twice: an instance
// other than the one recorded at admission, a higher restart count, or the
// recorded instance no longer running, all mean the stop already happened.
func decide(ctr appsv1alpha1.ContainerRecreateRequestContainer, st appsv1alpha1.ContainerRecreateRequestContainerRecreateState,
	strategy appsv1alpha1.ContainerRecreateRequestStrategy, pod *corev1.Pod, containers []cri.Container, now time.Time) decision {
	sc := ctr.StatusContext
	if sc == nil {
		return decision{action: actFail, reason: "the request was not admitted (no statusContext)"}
	}
	ps := podContainerStatus(pod, ctr.Name)
	cur, found := cri.Newest(containers, ctr.Name)
	recreated := (found && cur.ID != cri.RawContainerID(sc.ContainerID)) ||
		(ps != nil && (ps.ContainerID != sc.ContainerID || ps.RestartCount > sc.RestartCount))

	if !st.IsKilled {
		switch {
		case !found:
			return decision{action: actFail, reason: "not found in the container runtime"}
		case !recreated && live(cur):
			return decision{action: actKill, id: cur.ID}
		case recreated && strategy.ForceRecreate && st.Phase == appsv1alpha1.ContainerRecreateRequestPending &&
			live(cur) && (ps == nil || !ps.Ready):
			// Restarted since admission but still starting: force kills
			// that instance too. Only from Pending: once this daemon began
			// a kill (Recreating), a new instance is the result of it.
			return decision{action: actKill, id: cur.ID}
		}
	}
	return watch(ctr, strategy, pod, ps, cur, found, now)
}

// watch says whether a container that was stopped (or restarted on its
// own) counts as recreated.
func watch(ctr appsv1alpha1.ContainerRecreateRequestContainer, strategy appsv1alpha1.ContainerRecreateRequestStrategy,
	pod *corev1.Pod, ps *corev1.ContainerStatus, cur cri.Container, found bool, now time.Time) decision {
	policy := pod.Spec.RestartPolicy
	if found && cur.State == cri.ContainerExited {
		// The kubelet does not start this container again: exiting is
		// all a recreate can do.
		if policy == corev1.RestartPolicyNever || (policy == corev1.RestartPolicyOnFailure && cur.StatusKnown && cur.ExitCode == 0) {
			return decision{action: actSucceed}
		}
	}
	if policy == corev1.RestartPolicyNever {
		return decision{action: actWait}
	}
	// The new instance must be the one the runtime runs now, running and
	// ready in the pod's status, for minStartedSeconds.
	if ps == nil || ps.ContainerID == ctr.StatusContext.ContainerID || ps.State.Running == nil || !ps.Ready {
		return decision{action: actWait}
	}
	if !found || cri.RawContainerID(ps.ContainerID) != cur.ID || cur.State != cri.ContainerRunning {
		return decision{action: actWait}
	}
	readyAt := ps.State.Running.StartedAt.Add(time.Duration(strategy.MinStartedSeconds) * time.Second)
	if now.Before(readyAt) {
		return decision{action: actWait, after: readyAt.Sub(now)}
	}
	return decision{action: actSucceed}
}

func live(c cri.Container) bool {
	return c.State == cri.ContainerRunning || c.State == cri.ContainerCreated
}

func podContainerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}
