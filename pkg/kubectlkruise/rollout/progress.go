package rollout

import (
	"encoding/json"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// snapshot is a rollout's progress at one moment: the workload's status
// figures and what its pods say about the update under way.
type snapshot struct {
	kind   string
	name   string
	counts rolloutCounts
	paused bool
	// stalledMessage is set when the rollout passed its progress deadline.
	stalledMessage string
	stalled        bool
	// hooks are the pods waiting on a lifecycle hook.
	hooks []podHook
	// inPlace are the pods in the middle of an in-place update.
	inPlace []podBatch
}

// podHook is a pod waiting on a lifecycle hook, in the state it waits in.
type podHook struct {
	pod   string
	state pub.LifecycleStateType
}

// podBatch is a pod being updated in place by container batches.
type podBatch struct {
	pod string
	// batch counts the batches started so far (1 is the first).
	batch int
	// containers are the current batch's.
	containers []string
	// next are the containers of the batches still to come.
	next []string
}

// hookStates are the lifecycle states in which a pod waits on one of the
// hooks of l; without the hook, the controller passes the state at once.
func hookStates(l *pub.Lifecycle) []pub.LifecycleStateType {
	if l == nil {
		return nil
	}
	var states []pub.LifecycleStateType
	if l.PreNormal != nil {
		states = append(states, pub.LifecycleStatePreparingNormal)
	}
	if l.InPlaceUpdate != nil {
		states = append(states, pub.LifecycleStatePreparingUpdate, pub.LifecycleStateUpdated)
	}
	if l.PreDelete != nil {
		states = append(states, pub.LifecycleStatePreparingDelete)
	}
	return states
}

// takeSnapshot reads w and its pods (those it controls; others are ignored).
func takeSnapshot(display string, w workload, pods []*corev1.Pod) snapshot {
	s := snapshot{kind: display, name: w.GetName(), counts: w.counts(), paused: w.isPaused()}
	s.stalledMessage, s.stalled = w.stalled()
	waiting := hookStates(w.lifecycle())
	updatedReady, updatedAvailable := int32(0), int32(0)
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, pod := range pods {
		if owner := metav1.GetControllerOf(pod); owner == nil || owner.UID != w.GetUID() {
			continue
		}
		if pod.DeletionTimestamp == nil && revision.PodAt(pod, s.counts.updateRevision) && podReady(pod) {
			updatedReady++
			updatedAvailable++
		}
		if state := pub.LifecycleStateType(pod.Labels[pub.LifecycleStateKey]); slices.Contains(waiting, state) {
			s.hooks = append(s.hooks, podHook{pod: pod.Name, state: state})
		}
		if b, ok := inPlaceBatch(pod); ok {
			s.inPlace = append(s.inPlace, b)
		}
	}
	// Advanced DaemonSets report no updated-ready figures: count them from
	// the pods (available is read as ready there).
	if s.counts.updatedReady < 0 {
		s.counts.updatedReady, s.counts.updatedAvailable = updatedReady, updatedAvailable
	}
	return s
}

// done reports whether the rollout finished: the status is about the
// current spec, every pod outside the partition is updated, ready and
// available (as kubectl waits for a Deployment's: an updated pod is ready a
// moment before the controller records its update done, and minReadySeconds
// later still available), and no pod beyond the desired number is left. An
// Advanced DaemonSet, like the built-in one, must also have every node's pod
// available.
func (s snapshot) done() bool {
	c := s.counts
	target := c.target()
	if !c.observed || c.updated < target || c.updatedReady < target || c.updatedAvailable < target || c.total != c.desired {
		return false
	}
	if s.kind == "Advanced DaemonSet" && c.available < c.desired {
		return false
	}
	return true
}

// inPlaceBatch reads the in-place update state of pod; ok is false when the
// pod is not in the middle of an in-place update.
func inPlaceBatch(pod *corev1.Pod) (podBatch, bool) {
	raw, ok := pod.Annotations[pub.InPlaceUpdateStateKey]
	if !ok {
		return podBatch{}, false
	}
	var state pub.InPlaceUpdateState
	if err := json.Unmarshal([]byte(raw), &state); err != nil {
		return podBatch{}, false
	}
	next := map[string]bool{}
	for name := range state.NextContainerImages {
		next[name] = true
	}
	for name := range state.NextContainerResources {
		next[name] = true
	}
	for name := range state.NextContainerRefMetadata {
		next[name] = true
	}
	if len(next) == 0 && inPlaceDone(pod) {
		return podBatch{}, false
	}
	b := podBatch{pod: pod.Name, batch: max(len(state.ContainerBatchesRecord), 1)}
	if n := len(state.ContainerBatchesRecord); n > 0 {
		b.containers = slices.Clone(state.ContainerBatchesRecord[n-1].Containers)
	} else {
		for name := range state.LastContainerStatuses {
			b.containers = append(b.containers, name)
		}
	}
	slices.Sort(b.containers)
	for name := range next {
		b.next = append(b.next, name)
	}
	slices.Sort(b.next)
	return b, true
}

func podReady(pod *corev1.Pod) bool { return conditionTrue(pod, corev1.PodReady) }

// inPlaceDone reports whether the pod's InPlaceUpdateReady is True for an update that is done:
// True with reason ContainersRestarting is released to the kubelet while it still replaces the
// containers.
func inPlaceDone(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == pub.InPlaceUpdateReady {
			return c.Status == corev1.ConditionTrue && c.Reason != pub.InPlaceUpdateRestartingReason
		}
	}
	return false
}

func conditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
