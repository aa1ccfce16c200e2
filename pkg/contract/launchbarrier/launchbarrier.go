// Package launchbarrier is the mechanism of container launch priority that
// the pod admission webhook (pkg/webhook/priorityinjection) and the barrier
// controller (pkg/controller/launchpriority) share: the names users and
// OpenKruise's documentation know, how a container's priority is read, and
// the barrier env var that holds a container back until its key appears in
// the pod's barrier ConfigMap.
//
// docs/design/launch-priority.md describes the feature as a whole.
package launchbarrier

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// EnvPriority marks a regular container with its launch priority: an
	// integer, higher starts first, absent is 0.
	EnvPriority = "KRUISE_CONTAINER_PRIORITY"
	// EnvBarrier is the env var the webhook adds to the containers that
	// must wait: its value comes from a key of the barrier ConfigMap, so
	// the kubelet cannot create the container until the key exists.
	EnvBarrier = "KRUISE_CONTAINER_BARRIER"

	// AnnotationPriority set to OrderedValue on a pod launches its regular
	// containers in spec order, the first one first.
	AnnotationPriority = "apps.kruise.io/container-launch-priority"
	// OrderedValue is the only value AnnotationPriority may have.
	OrderedValue = "Ordered"
	// AnnotationCompleted is set to "true" on a pod once every key of its
	// barrier ConfigMap has been written.
	AnnotationCompleted = "apps.kruise.io/container-launch-priority-completed"
	// AnnotationReleased is kruise's own (OpenKruise has none): the key of
	// the lowest priority whose containers have been released, set when
	// that key is written. Changing the pod makes the kubelet sync it at
	// once, rather than on its retry backoff (10-15 s), so the released
	// containers start without waiting.
	AnnotationReleased = "apps.kruise.io/container-launch-priority-released"

	// BarrierSuffix ends the name of a named pod's barrier ConfigMap:
	// <pod name>-barrier.
	BarrierSuffix = "-barrier"
	// KeyPrefix starts every key of a barrier ConfigMap: p_<priority>.
	KeyPrefix = "p_"
	// KeyValue is the value of every key written.
	KeyValue = "true"

	// MinPriority and MaxPriority bound a priority (an int32, like a
	// PriorityClass value).
	MinPriority = math.MinInt32
	MaxPriority = math.MaxInt32
)

// Key is the barrier ConfigMap key that releases the containers of
// priority p.
func Key(p int) string { return KeyPrefix + strconv.Itoa(p) }

// ParseKey reads the priority a barrier key stands for.
func ParseKey(key string) (int, error) {
	digits, ok := strings.CutPrefix(key, KeyPrefix)
	if !ok {
		return 0, fmt.Errorf("barrier key %q does not start with %q", key, KeyPrefix)
	}
	p, err := parse(digits)
	if err != nil {
		return 0, fmt.Errorf("barrier key %q: %w", key, err)
	}
	return p, nil
}

// parse reads a priority: a decimal integer within [MinPriority,
// MaxPriority], nothing around it.
func parse(s string) (int, error) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer between %d and %d", s, MinPriority, MaxPriority)
	}
	return int(v), nil
}

// BarrierEnv is the env var that holds a container of priority p back until
// key p of the ConfigMap configMap exists.
func BarrierEnv(configMap string, p int) corev1.EnvVar {
	return corev1.EnvVar{
		Name: EnvBarrier,
		ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
			Key:                  Key(p),
		}},
	}
}

// Barrier is what a container's barrier env var says.
type Barrier struct {
	// ConfigMap names the barrier ConfigMap in the pod's namespace.
	ConfigMap string
	// Priority is the container's, read from the key.
	Priority int
}

// BarrierOf reads the container's barrier env var: ok is false when it has
// none; an error says why one it has is not a barrier kruise could have
// written (a literal value, another source, a malformed key).
func BarrierOf(c *corev1.Container) (b Barrier, ok bool, err error) {
	for i := range c.Env {
		e := &c.Env[i]
		if e.Name != EnvBarrier {
			continue
		}
		ok = true
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil || e.ValueFrom.ConfigMapKeyRef.Name == "" {
			return Barrier{}, true, fmt.Errorf("container %q: %s must come from a key of the barrier ConfigMap", c.Name, EnvBarrier)
		}
		ref := e.ValueFrom.ConfigMapKeyRef
		p, perr := ParseKey(ref.Key)
		if perr != nil {
			return Barrier{}, true, fmt.Errorf("container %q: %w", c.Name, perr)
		}
		if b.ConfigMap != "" && (b.ConfigMap != ref.Name || b.Priority != p) {
			return Barrier{}, true, fmt.Errorf("container %q has two different %s env vars", c.Name, EnvBarrier)
		}
		b = Barrier{ConfigMap: ref.Name, Priority: p}
	}
	return b, ok, nil
}

// Priorities returns the launch priority of each regular container of the
// pod, in spec order, and the problems that make them unknowable. With
// AnnotationPriority=Ordered the i-th container has priority -i and the
// containers' EnvPriority values are only checked; otherwise a container's
// priority is its EnvPriority value (the last one, as the kubelet reads
// duplicates), 0 when it has none. Init containers, native sidecars
// included, have no launch priority and are not looked at.
func Priorities(pod *corev1.Pod) ([]int, field.ErrorList) {
	var errs field.ErrorList
	ordered := false
	if v, ok := pod.Annotations[AnnotationPriority]; ok {
		if v != OrderedValue {
			errs = append(errs, field.NotSupported(field.NewPath("metadata", "annotations").Key(AnnotationPriority), v, []string{OrderedValue}))
		}
		ordered = v == OrderedValue
	}
	out := make([]int, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		for j := range c.Env {
			e := &c.Env[j]
			if e.Name != EnvPriority {
				continue
			}
			path := field.NewPath("spec", "containers").Index(i).Child("env").Index(j)
			if e.ValueFrom != nil {
				errs = append(errs, field.Forbidden(path.Child("valueFrom"),
					fmt.Sprintf("container %q: %s must be a literal integer: a value read from elsewhere is not known when the pod is admitted", c.Name, EnvPriority)))
				continue
			}
			p, err := parse(e.Value)
			if err != nil {
				errs = append(errs, field.Invalid(path.Child("value"), e.Value,
					fmt.Sprintf("container %q: %s must be an integer between %d and %d (higher starts first)", c.Name, EnvPriority, MinPriority, MaxPriority)))
				continue
			}
			out[i] = p
		}
		if ordered {
			out[i] = -i
		}
	}
	return out, errs
}
