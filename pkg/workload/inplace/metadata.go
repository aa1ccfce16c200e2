package inplace

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Env vars SidecarSet writes from its own annotations; a change of those annotations is
// SidecarSet's business and never restarts a container here (OpenKruise excludes them too).
var envFromMetadataExcluded = []string{"SIDECARSET_VERSION", "SIDECARSET_VERSION_ALT"}

// metadataKind is "labels" or "annotations": the two pod metadata maps env can read.
type metadataKind string

const (
	kindLabels      metadataKind = "labels"
	kindAnnotations metadataKind = "annotations"
)

// planMetadata splits the label and annotation changes of the templates between the containers
// that read a changed key as env (they must restart to see it) and the plain metadata patch.
// A removed key that a container reads is refused: the ObjectMeta a container batch records
// (OpenKruise's wire format) can carry new values but not removals.
func planMetadata(spec *Spec, old, new *corev1.PodTemplateSpec) error {
	// Keys kruise writes on pods and decides by (a pod asked to go, its lifecycle state, this
	// very update's record) are never set or removed from a template: they are the pod's own.
	oldLabels, oldAnnotations := appsv1beta1.WithoutReserved(old.Labels, old.Annotations)
	newLabels, newAnnotations := appsv1beta1.WithoutReserved(new.Labels, new.Annotations)
	for _, kind := range []metadataKind{kindLabels, kindAnnotations} {
		oldMap, newMap := oldLabels, newLabels
		if kind == kindAnnotations {
			oldMap, newMap = oldAnnotations, newAnnotations
		}
		for _, k := range sortedKeys(newMap) {
			v := newMap[k]
			if was, ok := oldMap[k]; ok && was == v {
				continue
			}
			if c := readerOf(new.Spec.InitContainers, kind, k); c != "" {
				return &NotInPlaceError{Field: fmt.Sprintf("spec.initContainers[%s].env", c),
					Detail: fmt.Sprintf("reads metadata.%s['%s'], which changes, and an init container cannot be restarted", kind, k)}
			}
			readers := readersOf(new.Spec.Containers, kind, k)
			if kind == kindAnnotations && k == pub.RestartedAtAnnotationKey {
				readers = restartReaders(new.Spec.Containers)
			}
			if len(readers) == 0 {
				spec.Metadata.set(kind, k, v)
				continue
			}
			for _, c := range readers {
				spec.refMetadata(c, kind, k, v)
			}
		}
		for _, k := range sortedKeys(oldMap) {
			if _, ok := newMap[k]; ok {
				continue
			}
			c := readerOf(new.Spec.InitContainers, kind, k)
			if c == "" {
				c = readerOf(new.Spec.Containers, kind, k)
			}
			if c != "" {
				return &NotInPlaceError{Field: fmt.Sprintf("metadata.%s['%s']", kind, k),
					Detail: fmt.Sprintf("removed, but container %s reads it as env", c)}
			}
			spec.Metadata.remove(kind, k)
		}
	}
	return nil
}

// restartReaders are the containers a new value of the restart annotation
// (pub.RestartedAtAnnotationKey) restarts: every regular container, as if each read it as env.
// The annotation says "containers started before this are stale", which is what a changed env
// value means too, so the restart goes the way of an env-from-metadata update: batches by launch
// priority, the readiness gate held until each container is new, kruise-daemon stopping the old
// one (apply.go marks it). Native sidecars are not restarted: kruise-daemon's pod cache does not
// hold init containers.
func restartReaders(cs []corev1.Container) []string {
	out := make([]string, 0, len(cs))
	for i := range cs {
		out = append(out, cs[i].Name)
	}
	return out
}

// restartAsked reports whether a container's changed metadata carries the restart annotation.
func restartAsked(meta metav1.ObjectMeta) bool {
	_, ok := meta.Annotations[pub.RestartedAtAnnotationKey]
	return ok
}

func (m *MetadataPatch) set(kind metadataKind, k, v string) {
	target := &m.Labels
	if kind == kindAnnotations {
		target = &m.Annotations
	}
	if *target == nil {
		*target = map[string]string{}
	}
	(*target)[k] = v
}

func (m *MetadataPatch) remove(kind metadataKind, k string) {
	if kind == kindAnnotations {
		m.RemovedAnnotations = append(m.RemovedAnnotations, k)
	} else {
		m.RemovedLabels = append(m.RemovedLabels, k)
	}
}

func (s *Spec) refMetadata(container string, kind metadataKind, k, v string) {
	meta := s.ContainerRefMetadata[container]
	if kind == kindLabels {
		meta.Labels = setAndRemove(meta.Labels, map[string]string{k: v}, nil)
	} else {
		meta.Annotations = setAndRemove(meta.Annotations, map[string]string{k: v}, nil)
	}
	s.ContainerRefMetadata[container] = meta
}

// readersOf names the containers whose env reads metadata.<kind>['key'].
func readersOf(cs []corev1.Container, kind metadataKind, key string) []string {
	var out []string
	for i := range cs {
		if readsMetadata(&cs[i], kind, key) {
			out = append(out, cs[i].Name)
		}
	}
	return out
}

func readerOf(cs []corev1.Container, kind metadataKind, key string) string {
	if r := readersOf(cs, kind, key); len(r) > 0 {
		return r[0]
	}
	return ""
}

// readsMetadata reports whether one of c's env vars comes from the downward API field
// metadata.<kind>['key'].
func readsMetadata(c *corev1.Container, kind metadataKind, key string) bool {
	for i := range c.Env {
		e := &c.Env[i]
		if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || contains(envFromMetadataExcluded, e.Name) {
			continue
		}
		if k, ok := metadataKey(e.ValueFrom.FieldRef.FieldPath, kind); ok && k == key {
			return true
		}
	}
	return false
}

// metadataKey reads the key out of a field path metadata.<kind>['key'].
func metadataKey(fieldPath string, kind metadataKind) (string, bool) {
	rest, ok := strings.CutPrefix(fieldPath, "metadata."+string(kind)+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// refKeys are the label and annotation keys the containers read among those spec changes, each
// as "<kind>/<key>": containers sharing one must be restarted in the same batch.
func refKeys(refs map[string]metav1.ObjectMeta, containers []string) map[string]bool {
	out := map[string]bool{}
	for _, c := range containers {
		for k := range refs[c].Labels {
			out[string(kindLabels)+"/"+k] = true
		}
		for k := range refs[c].Annotations {
			// The restart annotation is not shared: every container restarts once its own batch
			// is applied, after the first batch has written the annotation, so a restart keeps
			// the launch-priority batches.
			if k != pub.RestartedAtAnnotationKey {
				out[string(kindAnnotations)+"/"+k] = true
			}
		}
	}
	return out
}
