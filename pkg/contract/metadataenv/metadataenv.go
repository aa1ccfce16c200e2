// Package metadataenv finds the env vars of a container that the kubelet
// fills from the pod's own labels and annotations (downward API fieldRefs
// metadata.labels['k'] and metadata.annotations['k']), and what they
// resolve to for given metadata. The kubelet resolves them once, when it
// creates the container: a later change of the label or annotation reaches
// the process only through a new container.
package metadataenv

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Source is the metadata map a Var reads.
type Source string

const (
	Labels      Source = "labels"
	Annotations Source = "annotations"
)

// Var is one env var filled from a pod label or annotation.
type Var struct {
	// Name is the env var's name.
	Name   string
	Source Source
	// Key is the label or annotation key.
	Key string
}

// ParseFieldPath reads a fieldRef path of the form
// metadata.labels['key'] or metadata.annotations['key'], the only
// subscripted paths the API accepts for env. ok is false for any other
// path (metadata.name, status.podIP, ...).
func ParseFieldPath(path string) (src Source, key string, ok bool) {
	body, found := strings.CutSuffix(path, "']")
	if !found {
		return "", "", false
	}
	field, key, found := strings.Cut(body, "['")
	if !found || key == "" {
		return "", "", false
	}
	switch field {
	case "metadata.labels":
		return Labels, key, true
	case "metadata.annotations":
		return Annotations, key, true
	default:
		return "", "", false
	}
}

// Vars lists, in order, the container's env vars whose value comes from a
// pod label or annotation. Where the container defines a name more than
// once, the last definition is the one the kubelet uses, so a name counts
// only when its last definition reads metadata.
func Vars(c *corev1.Container) []Var {
	last := make(map[string]int, len(c.Env))
	for i := range c.Env {
		last[c.Env[i].Name] = i
	}
	var out []Var
	for i := range c.Env {
		e := &c.Env[i]
		if last[e.Name] != i || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil {
			continue
		}
		if src, key, ok := ParseFieldPath(e.ValueFrom.FieldRef.FieldPath); ok {
			out = append(out, Var{Name: e.Name, Source: src, Key: key})
		}
	}
	return out
}

// FieldPath is v's fieldRef path, as ParseFieldPath reads it.
func (v Var) FieldPath() string {
	return "metadata." + string(v.Source) + "['" + v.Key + "']"
}

// Value is what the kubelet resolves v to for a pod with these labels and
// annotations: the value, or "" when the pod has no such key.
func (v Var) Value(labels, annotations map[string]string) string {
	if v.Source == Labels {
		return labels[v.Key]
	}
	return annotations[v.Key]
}
