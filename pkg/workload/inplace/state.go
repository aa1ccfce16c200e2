package inplace

import (
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// ReadState returns the in-place update state the pod carries, from the annotation
// apps.kruise.io/inplace-update-state or, on pods OpenKruise updated before v0.9, the
// annotation inplace-update-state; nil when it has neither. A value that does not decode is an
// *AnnotationError.
func ReadState(pod *corev1.Pod) (*pub.InPlaceUpdateState, error) {
	key, raw, ok := annotation(pod, pub.InPlaceUpdateStateKey, pub.InPlaceUpdateStateKeyOld)
	if !ok {
		return nil, nil
	}
	state := &pub.InPlaceUpdateState{}
	if err := json.Unmarshal([]byte(raw), state); err != nil {
		return nil, annotationError(pod, key, "is not an in-place update state", err)
	}
	return state, nil
}

// WriteState writes state into the pod's annotation under the current key, and drops the
// legacy one.
func WriteState(pod *corev1.Pod, state *pub.InPlaceUpdateState) error {
	data, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("encoding the in-place update state: %w", err)
	}
	setAnnotation(pod, pub.InPlaceUpdateStateKey, string(data))
	delete(pod.Annotations, pub.InPlaceUpdateStateKeyOld)
	return nil
}

// Grace is what an update waiting out its grace period applies once the period has passed,
// in the annotation apps.kruise.io/inplace-update-grace (OpenKruise's UpdateSpec, by the same
// JSON names, so a pod OpenKruise left waiting is finished here, and the other way round).
type Grace struct {
	Revision              string                                 `json:"revision"`
	ContainerImages       map[string]string                      `json:"containerImages,omitempty"`
	ContainerRefMetadata  map[string]metav1.ObjectMeta           `json:"containerRefMetadata,omitempty"`
	ContainerResources    map[string]corev1.ResourceRequirements `json:"containerResources,omitempty"`
	MetaDataPatch         []byte                                 `json:"metaDataPatch,omitempty"`
	UpdateEnvFromMetadata bool                                   `json:"updateEnvFromMetadata,omitempty"`
	GraceSeconds          int32                                  `json:"graceSeconds,omitempty"`
	// OldTemplate and NewTemplate are read for compatibility and not written: the spec above
	// says all an update needs.
	OldTemplate *corev1.PodTemplateSpec `json:"oldTemplate,omitempty"`
	NewTemplate *corev1.PodTemplateSpec `json:"newTemplate,omitempty"`
}

// metadataPatchDoc is the strategic merge patch of pod metadata that MetaDataPatch holds; a
// null value removes a key.
type metadataPatchDoc struct {
	Metadata struct {
		Labels      map[string]*string `json:"labels,omitempty"`
		Annotations map[string]*string `json:"annotations,omitempty"`
	} `json:"metadata"`
}

// NewGrace records spec for the update to revision, applied after graceSeconds.
func NewGrace(revision string, spec *Spec, graceSeconds int32) (*Grace, error) {
	g := &Grace{
		Revision:              revision,
		ContainerImages:       spec.ContainerImages,
		ContainerRefMetadata:  spec.ContainerRefMetadata,
		ContainerResources:    spec.ContainerResources,
		UpdateEnvFromMetadata: spec.UpdateEnvFromMetadata(),
		GraceSeconds:          graceSeconds,
	}
	if !spec.Metadata.Empty() {
		var doc metadataPatchDoc
		doc.Metadata.Labels = patchMap(spec.Metadata.Labels, spec.Metadata.RemovedLabels)
		doc.Metadata.Annotations = patchMap(spec.Metadata.Annotations, spec.Metadata.RemovedAnnotations)
		data, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("encoding the metadata patch: %w", err)
		}
		g.MetaDataPatch = data
	}
	return g, nil
}

func patchMap(set map[string]string, removed []string) map[string]*string {
	if len(set) == 0 && len(removed) == 0 {
		return nil
	}
	out := map[string]*string{}
	for k, v := range set {
		out[k] = &v
	}
	for _, k := range removed {
		out[k] = nil
	}
	return out
}

// Spec is the update the grace record holds.
func (g *Grace) Spec() (*Spec, error) {
	spec := newSpec()
	for n, img := range g.ContainerImages {
		spec.ContainerImages[n] = img
	}
	for n, r := range g.ContainerResources {
		spec.ContainerResources[n] = r
	}
	for n, m := range g.ContainerRefMetadata {
		spec.ContainerRefMetadata[n] = m
	}
	if len(g.MetaDataPatch) == 0 {
		return spec, nil
	}
	var doc metadataPatchDoc
	if err := json.Unmarshal(g.MetaDataPatch, &doc); err != nil {
		return nil, fmt.Errorf("reading the metadata patch of the grace record: %w", err)
	}
	for _, k := range sortedKeys(doc.Metadata.Labels) {
		if v := doc.Metadata.Labels[k]; v != nil {
			spec.Metadata.set(kindLabels, k, *v)
		} else {
			spec.Metadata.remove(kindLabels, k)
		}
	}
	for _, k := range sortedKeys(doc.Metadata.Annotations) {
		if v := doc.Metadata.Annotations[k]; v != nil {
			spec.Metadata.set(kindAnnotations, k, *v)
		} else {
			spec.Metadata.remove(kindAnnotations, k)
		}
	}
	return spec, nil
}

// ReadGrace returns the grace record the pod carries, under the current key or the legacy one;
// nil when it has none. A value that does not decode is an *AnnotationError.
func ReadGrace(pod *corev1.Pod) (*Grace, error) {
	key, raw, ok := annotation(pod, pub.InPlaceUpdateGraceKey, pub.InPlaceUpdateGraceKeyOld)
	if !ok {
		return nil, nil
	}
	g := &Grace{}
	if err := json.Unmarshal([]byte(raw), g); err != nil {
		return nil, annotationError(pod, key, "is not an in-place update grace record", err)
	}
	return g, nil
}

// WriteGrace writes g into the pod's annotation under the current key.
func WriteGrace(pod *corev1.Pod, g *Grace) error {
	data, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("encoding the in-place update grace record: %w", err)
	}
	setAnnotation(pod, pub.InPlaceUpdateGraceKey, string(data))
	delete(pod.Annotations, pub.InPlaceUpdateGraceKeyOld)
	return nil
}

// RemoveGrace drops the grace record under both keys.
func RemoveGrace(pod *corev1.Pod) {
	delete(pod.Annotations, pub.InPlaceUpdateGraceKey)
	delete(pod.Annotations, pub.InPlaceUpdateGraceKeyOld)
}

// annotation returns the value of the first of keys the pod has, and that key.
func annotation(pod *corev1.Pod, keys ...string) (string, string, bool) {
	for _, k := range keys {
		if v, ok := pod.Annotations[k]; ok {
			return k, v, true
		}
	}
	return "", "", false
}

func setAnnotation(pod *corev1.Pod, key, value string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[key] = value
}

// sortedNames is a sorted copy of names.
func sortedNames(names []string) []string {
	out := append([]string(nil), names...)
	sort.Strings(out)
	return out
}
