package envrestart

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/contract/metadataenv"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/pkg/daemon/crrexec"
)

// action is what to do about one container.
type action int

const (
	// actNone: its env from metadata is up to date.
	actNone action = iota
	// actWait: it is not running (the kubelet is between instances), or
	// this daemon is stopping it or has stopped it; the next pod event
	// looks again.
	actWait
	// actRestart: its env is out of date; stop instance id once.
	actRestart
	// actSkip: its env is out of date but a stop could end it for good.
	actSkip
	// actUnknown: the runtime cannot say what env it was created with;
	// nothing is stopped and the pod is looked at again with backoff.
	actUnknown
)

type verdict struct {
	action action
	// id is the bare CRI ID of the running instance, once known.
	id string
	// stale names the env vars out of date (actRestart, actSkip).
	stale []string
	// reason says why, for an Event (actSkip, actUnknown).
	reason string
	// err is the runtime's error (actUnknown); runtimeGone marks one that
	// is the runtime's, not the container's (logged, no Event).
	err         error
	runtimeGone bool
	// restart: the update asks for the restart (actRestart), not stale env.
	restart bool
}

// checkRestart decides about a container the pod's update restarts without
// a new image: the instance old (as the pod's status names it) recorded
// when its batch was applied is stopped once; any other instance is new.
// The pod's status is enough: the runtime has nothing to add.
func (r *Restarter) checkRestart(key string, pod *corev1.Pod, name, old string) verdict {
	st := containerStatus(pod, name)
	if st == nil || st.ContainerID == "" {
		return verdict{action: actWait}
	}
	if st.ContainerID != old {
		return verdict{action: actNone}
	}
	id := cri.RawContainerID(st.ContainerID)
	switch {
	case st.State.Running == nil || r.mem.busy(key, pod.UID, id):
		return verdict{action: actWait, id: id}
	case !restartsAlways(pod):
		return verdict{action: actSkip, id: id, restart: true,
			reason: fmt.Sprintf("the pod's update restarts container %s, but the pod's restartPolicy is %s: "+
				"stopping the container could end it for good, so it keeps running", name, pod.Spec.RestartPolicy)}
	}
	return verdict{action: actRestart, id: id, restart: true}
}

// check compares the env a running container was created with, as its
// runtime recorded it, with what its vars resolve to from the pod's
// current labels and annotations. It reads the runtime's record
// (ContainerStatus, verbose) and runs nothing in the container.
func (r *Restarter) check(ctx context.Context, key string, pod *corev1.Pod, c *corev1.Container, vars []metadataenv.Var) verdict {
	st := containerStatus(pod, c.Name)
	if st == nil || st.State.Running == nil || st.ContainerID == "" {
		return verdict{action: actWait}
	}
	id := cri.RawContainerID(st.ContainerID)
	if r.mem.busy(key, pod.UID, id) {
		return verdict{action: actWait, id: id}
	}
	info, err := r.runtime.ContainerInfo(ctx, id)
	if err != nil {
		return verdict{action: actUnknown, id: id, err: err, runtimeGone: crrexec.RuntimeGone(err),
			reason: fmt.Sprintf("cannot read container %s (%s) from the container runtime: %s", c.Name, id, cri.Redact(err.Error()))}
	}
	if info.State != cri.ContainerRunning {
		return verdict{action: actWait, id: id}
	}
	env, err := info.CreatedEnv()
	if err != nil {
		return verdict{action: actUnknown, id: id, err: err,
			reason: fmt.Sprintf("cannot tell the env container %s (%s) was created with: %v", c.Name, id, err)}
	}
	var stale []string
	for _, v := range vars {
		got, ok := env.Lookup(v.Name)
		if !ok {
			err := fmt.Errorf("the runtime's record of container %s (%s, %s) has no env var %s", c.Name, id, env.Source, v.Name)
			return verdict{action: actUnknown, id: id, err: err, reason: err.Error()}
		}
		if got != v.Value(pod.Labels, pod.Annotations) {
			stale = append(stale, v.Name)
		}
	}
	switch {
	case len(stale) == 0:
		return verdict{action: actNone, id: id}
	case !restartsAlways(pod):
		return verdict{action: actSkip, id: id, stale: stale,
			reason: fmt.Sprintf("env %s of container %s comes from pod metadata that changed, but the pod's restartPolicy is %s: "+
				"stopping the container could end it for good, so it keeps its old values", strings.Join(stale, ", "), c.Name, pod.Spec.RestartPolicy)}
	default:
		return verdict{action: actRestart, id: id, stale: stale}
	}
}

// restartsAlways reports whether the kubelet starts a stopped container of
// the pod again whatever its exit code.
func restartsAlways(pod *corev1.Pod) bool {
	return pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || pod.Spec.RestartPolicy == ""
}

// containerStatus is the pod's status of container name, or nil.
func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if s := &pod.Status.ContainerStatuses[i]; s.Name == name {
			return s
		}
	}
	return nil
}
