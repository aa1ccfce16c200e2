package inplace

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// Target is the revision a pod is updated to, as the workload records it.
type Target struct {
	// Revision is the name recorded in the state annotation.
	Revision string
	// RevisionLabelKey and RevisionLabelValue are the pod label that tells the workload the
	// pod's revision (controller-revision-hash for most); no label is written when the key is
	// empty.
	RevisionLabelKey   string
	RevisionLabelValue string
	// Mutate, when set, changes the pod in the same write that starts the update: a workload's
	// own bookkeeping that must not be seen apart from it (the lifecycle state Updating).
	Mutate func(*corev1.Pod)
}

// Step is one write of an in-place update, computed from the pod as read: the pod to write
// with an update call, and the resources to request through the resize subresource first.
type Step struct {
	// Pod is a changed copy of the pod read; its resources are those of the pod read.
	Pod *corev1.Pod
	// Containers are the batch this step applies, sorted; none for a step that only starts a
	// grace period.
	Containers []string
	// Resize: container name → its resources after the step.
	Resize map[string]corev1.ResourceRequirements
	// Grace reports that the step only starts a grace period: the pod records the update, and
	// FinishGrace applies it once the period has passed.
	Grace bool
}

// Start begins the update of pod to target by spec at time now: it writes the revision label
// and the state annotation, and either the grace record (graceSeconds > 0) or the pod's
// metadata change and the first batch of containers. pod is not changed.
func Start(pod *corev1.Pod, spec *Spec, target Target, graceSeconds int32, now time.Time) (*Step, error) {
	out := pod.DeepCopy()
	if target.RevisionLabelKey != "" {
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[target.RevisionLabelKey] = target.RevisionLabelValue
	}
	if target.Mutate != nil {
		target.Mutate(out)
	}
	state := &pub.InPlaceUpdateState{
		Revision:              target.Revision,
		UpdateTimestamp:       metav1.NewTime(now),
		UpdateEnvFromMetadata: spec.UpdateEnvFromMetadata(),
		UpdateResources:       len(spec.ContainerResources) > 0,
		UpdateImages:          len(spec.ContainerImages) > 0,
	}
	RemoveGrace(out)
	if graceSeconds > 0 {
		g, err := NewGrace(target.Revision, spec, graceSeconds)
		if err != nil {
			return nil, err
		}
		if err := WriteGrace(out, g); err != nil {
			return nil, err
		}
		if err := WriteState(out, state); err != nil {
			return nil, err
		}
		return &Step{Pod: out, Grace: true}, nil
	}
	spec.Metadata.applyTo(&out.ObjectMeta)
	return applyFirstBatch(out, spec, state, now)
}

// FinishGrace applies the update a pod has waited its grace period for: the metadata change and
// the first batch. It does not check that the period has passed (Decide does).
func FinishGrace(pod *corev1.Pod, now time.Time) (*Step, error) {
	g, err := ReadGrace(pod)
	if err != nil {
		return nil, err
	}
	if g == nil {
		return nil, fmt.Errorf("pod %s/%s has no in-place update grace record", pod.Namespace, pod.Name)
	}
	state, err := ReadState(pod)
	if err != nil {
		return nil, err
	}
	if state == nil {
		return nil, graceWithoutState(pod)
	}
	spec, err := g.Spec()
	if err != nil {
		return nil, badGracePatch(pod, err)
	}
	out := pod.DeepCopy()
	RemoveGrace(out)
	spec.Metadata.applyTo(&out.ObjectMeta)
	return applyFirstBatch(out, spec, state, now)
}

// NextBatch applies the next batch of the update the pod's state records. It does not check
// that the current batch is done (Decide does).
func NextBatch(pod *corev1.Pod, now time.Time) (*Step, error) {
	state, err := ReadState(pod)
	if err != nil {
		return nil, err
	}
	if state == nil || !hasNext(state) {
		return nil, fmt.Errorf("pod %s/%s has no batch of an in-place update left", pod.Namespace, pod.Name)
	}
	spec := newSpec()
	for n, img := range state.NextContainerImages {
		spec.ContainerImages[n] = img
	}
	for n, r := range state.NextContainerResources {
		spec.ContainerResources[n] = r
	}
	for n, m := range state.NextContainerRefMetadata {
		spec.ContainerRefMetadata[n] = m
	}
	return applyFirstBatch(pod.DeepCopy(), spec, state, now)
}

// applyFirstBatch changes out for the first batch of spec, keeps the rest in state's next
// fields, and writes state into out.
func applyFirstBatch(out *corev1.Pod, spec *Spec, state *pub.InPlaceUpdateState, now time.Time) (*Step, error) {
	var batch []string
	if batches := Batches(out, spec); len(batches) > 0 {
		batch = batches[0]
	}
	in := map[string]bool{}
	for _, n := range batch {
		in[n] = true
	}
	state.NextContainerImages, state.NextContainerResources, state.NextContainerRefMetadata = nil, nil, nil
	step := &Step{Pod: out, Containers: batch}

	for _, name := range sortedKeys(spec.ContainerImages) {
		if !in[name] {
			state.NextContainerImages = setEntry(state.NextContainerImages, name, spec.ContainerImages[name])
			continue
		}
		c := containerOf(out, name)
		if c == nil {
			return nil, fmt.Errorf("pod %s/%s has no container %s to update", out.Namespace, out.Name, name)
		}
		c.Image = spec.ContainerImages[name]
		recordLastStatus(state, out, name)
	}
	for _, name := range sortedKeys(spec.ContainerResources) {
		if !in[name] {
			state.NextContainerResources = setEntry(state.NextContainerResources, name, spec.ContainerResources[name])
			continue
		}
		if !hasRegularContainer(out, name) {
			return nil, fmt.Errorf("pod %s/%s has no container %s to resize", out.Namespace, out.Name, name)
		}
		step.Resize = setEntry(step.Resize, name, spec.ContainerResources[name])
	}
	for _, name := range sortedKeys(spec.ContainerRefMetadata) {
		meta := spec.ContainerRefMetadata[name]
		if !in[name] {
			state.NextContainerRefMetadata = setEntry(state.NextContainerRefMetadata, name, meta)
			continue
		}
		if containerOf(out, name) == nil {
			return nil, fmt.Errorf("pod %s/%s has no container %s to restart", out.Namespace, out.Name, name)
		}
		MetadataPatch{Labels: meta.Labels, Annotations: meta.Annotations}.applyTo(&out.ObjectMeta)
		recordLastStatus(state, out, name)
		if _, newImage := spec.ContainerImages[name]; restartAsked(meta) && !newImage {
			// Nothing in the spec makes the kubelet restart it: kruise-daemon stops it. A new
			// image restarts it already, and a second stop of the same container would run its
			// preStop hook twice.
			last := state.LastContainerStatuses[name]
			last.Restart = true
			state.LastContainerStatuses[name] = last
		}
	}

	state.PreCheckBeforeNext = nil
	if hasNext(state) {
		state.PreCheckBeforeNext = &pub.InPlaceUpdatePreCheckBeforeNext{ContainersRequiredReady: batch}
	}
	if len(batch) > 0 {
		state.ContainerBatchesRecord = append(state.ContainerBatchesRecord,
			pub.InPlaceUpdateContainerBatch{Timestamp: metav1.NewTime(now), Containers: batch})
	}
	if err := WriteState(out, state); err != nil {
		return nil, err
	}
	return step, nil
}

// recordLastStatus records what the container runs now, to tell its successor by.
func recordLastStatus(state *pub.InPlaceUpdateState, pod *corev1.Pod, name string) {
	last := pub.InPlaceUpdateContainerStatus{}
	if st := containerStatusOf(pod, name); st != nil {
		last = pub.InPlaceUpdateContainerStatus{ImageID: st.ImageID, ContainerID: st.ContainerID}
	}
	state.LastContainerStatuses = setEntry(state.LastContainerStatuses, name, last)
}

func hasNext(state *pub.InPlaceUpdateState) bool {
	return len(state.NextContainerImages) > 0 || len(state.NextContainerRefMetadata) > 0 || len(state.NextContainerResources) > 0
}

func setEntry[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] = v
	return m
}

// containerOf finds a regular container or native sidecar of the pod by name.
func containerOf(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name && isNativeSidecar(&pod.Spec.InitContainers[i]) {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

func hasRegularContainer(pod *corev1.Pod, name string) bool {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return true
		}
	}
	return false
}

// containerStatusOf finds the status of a regular container or native sidecar by name.
func containerStatusOf(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
