package crrexec

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// statusWriter gathers changes to a CRR's status and writes them with
// UpdateStatus, carrying the resourceVersion they were computed from. The
// cached object is copied only when something changes.
type statusWriter struct {
	e *Executor
	// base is the object last read or written.
	base *appsv1alpha1.ContainerRecreateRequest
	// upd is base's copy with the pending changes; nil when there are none.
	upd *appsv1alpha1.ContainerRecreateRequest
}

func (s *statusWriter) cur() *appsv1alpha1.ContainerRecreateRequest {
	if s.upd != nil {
		return s.upd
	}
	return s.base
}

func (s *statusWriter) edit() *appsv1alpha1.ContainerRecreateRequest {
	if s.upd == nil {
		s.upd = s.base.DeepCopy()
	}
	return s.upd
}

// state is the container's current state (Pending when it has none yet).
func (s *statusWriter) state(name string) appsv1alpha1.ContainerRecreateRequestContainerRecreateState {
	for _, st := range s.cur().Status.ContainerRecreateStates {
		if st.Name == name {
			return st
		}
	}
	return appsv1alpha1.ContainerRecreateRequestContainerRecreateState{Name: name, Phase: appsv1alpha1.ContainerRecreateRequestPending}
}

// set changes the container's state.
func (s *statusWriter) set(st appsv1alpha1.ContainerRecreateRequestContainerRecreateState) {
	if s.state(st.Name) == st {
		return
	}
	upd := s.edit()
	for i := range upd.Status.ContainerRecreateStates {
		if upd.Status.ContainerRecreateStates[i].Name == st.Name {
			upd.Status.ContainerRecreateStates[i] = st
			return
		}
	}
	upd.Status.ContainerRecreateStates = append(upd.Status.ContainerRecreateStates, st)
}

// start moves the request to Recreating with a state per container, in
// spec order.
func (s *statusWriter) start() {
	c := s.cur()
	if c.Status.Phase == appsv1alpha1.ContainerRecreateRequestRecreating && len(c.Status.ContainerRecreateStates) >= len(c.Spec.Containers) {
		return
	}
	upd := s.edit()
	upd.Status.Phase = appsv1alpha1.ContainerRecreateRequestRecreating
	states := make([]appsv1alpha1.ContainerRecreateRequestContainerRecreateState, 0, len(upd.Spec.Containers))
	for _, ctr := range upd.Spec.Containers {
		states = append(states, s.state(ctr.Name))
	}
	upd.Status.ContainerRecreateStates = states
}

// done reports whether every container is Succeeded or Failed.
func (s *statusWriter) done() bool {
	for _, ctr := range s.cur().Spec.Containers {
		if !finalPhase(s.state(ctr.Name).Phase) {
			return false
		}
	}
	return true
}

// complete finishes the request with a message summing it up and the
// snapshot of the recreated containers' statuses in pod, and says whether
// any container failed.
func (s *statusWriter) complete(pod *corev1.Pod) (failed bool) {
	var failures []string
	succeeded := 0
	for _, ctr := range s.cur().Spec.Containers {
		switch st := s.state(ctr.Name); st.Phase {
		case appsv1alpha1.ContainerRecreateRequestSucceeded:
			succeeded++
		case appsv1alpha1.ContainerRecreateRequestFailed:
			failures = append(failures, fmt.Sprintf("container %s failed: %s", ctr.Name, st.Message))
		}
	}
	message := fmt.Sprintf("recreated %d container%s", succeeded, plural(succeeded))
	if len(failures) > 0 {
		message = strings.Join(failures, "; ")
	}
	upd := s.edit()
	now := metav1.NewTime(s.e.clock.Now())
	upd.Status.Phase = appsv1alpha1.ContainerRecreateRequestCompleted
	upd.Status.CompletionTime = &now
	upd.Status.Message = message
	upd.Status.ContainerStatusSnapshot = appsv1alpha1.ContainerStatusSnapshot(upd, pod)
	return len(failures) > 0
}

// flush writes the pending changes. A conflict (someone wrote since we
// read, the controller completing the request, say) comes back wrapped;
// the caller requeues and decides again.
func (s *statusWriter) flush(ctx context.Context) error {
	if s.upd == nil {
		return nil
	}
	got, err := s.e.kruiseClient.ContainerRecreateRequests(s.upd.Namespace).UpdateStatus(ctx, s.upd, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("writing the status of CRR %s/%s: %w", s.upd.Namespace, s.upd.Name, err)
	}
	s.base, s.upd = got, nil
	return nil
}

func finalPhase(p appsv1alpha1.ContainerRecreateRequestPhase) bool {
	return p == appsv1alpha1.ContainerRecreateRequestSucceeded || p == appsv1alpha1.ContainerRecreateRequestFailed
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
