package inplace

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/contract/launchbarrier"
)

// Batches splits the containers spec touches on pod into the batches they are updated in, first
// batch first, each sorted by name. A container's launch priority orders the batches, higher
// first: the one the launch-priority webhook wrote into its barrier env when it has one, else
// the pod's own declaration (env KRUISE_CONTAINER_PRIORITY, or the Ordered annotation). Containers
// without a priority, native sidecars among them, join the first batch; containers of one
// priority share a batch; and a container reading a changed label or annotation that a
// container of an earlier batch also reads joins that earlier batch, since the key is written
// once, with the first container that needs it.
func Batches(pod *corev1.Pod, spec *Spec) [][]string {
	touched := map[string]bool{}
	for _, n := range spec.Containers() {
		touched[n] = true
	}
	if len(touched) == 0 {
		return nil
	}
	declared := declaredPriorities(pod)
	var first []string
	byPriority := map[int][]string{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if !touched[c.Name] {
			continue
		}
		delete(touched, c.Name)
		if p, ok := priorityOf(c, declared[i]); ok {
			byPriority[p] = append(byPriority[p], c.Name)
		} else {
			first = append(first, c.Name)
		}
	}
	// Native sidecars, and names the pod lacks (applying them fails with a clear error).
	first = append(first, sortedKeys(touched)...)

	priorities := make([]int, 0, len(byPriority))
	for p := range byPriority {
		priorities = append(priorities, p)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(priorities)))
	var batches [][]string
	if len(priorities) > 0 {
		first = append(first, byPriority[priorities[0]]...)
		priorities = priorities[1:]
	}
	batches = append(batches, first)
	for _, p := range priorities {
		batches = append(batches, byPriority[p])
	}
	return joinSharedKeys(batches, spec)
}

// joinSharedKeys moves into each batch the containers of later batches that read a changed key
// one of its containers reads, until no later container shares one.
func joinSharedKeys(batches [][]string, spec *Spec) [][]string {
	for i := range batches {
		for moved := true; moved; {
			moved = false
			keys := refKeys(spec.ContainerRefMetadata, batches[i])
			for j := i + 1; j < len(batches); j++ {
				var stay []string
				for _, c := range batches[j] {
					if sharesKey(keys, refKeys(spec.ContainerRefMetadata, []string{c})) {
						batches[i] = append(batches[i], c)
						moved = true
					} else {
						stay = append(stay, c)
					}
				}
				batches[j] = stay
			}
		}
	}
	out := batches[:0]
	for _, b := range batches {
		if len(b) > 0 {
			sort.Strings(b)
			out = append(out, b)
		}
	}
	return out
}

func sharesKey(a, b map[string]bool) bool {
	for k := range b {
		if a[k] {
			return true
		}
	}
	return false
}

// declared is a container's priority as the pod declares it.
type declared struct {
	priority int
	ok       bool
}

// declaredPriorities reads the priorities the pod declares, per regular container in spec
// order. A pod whose declaration is malformed declares none (the webhook refuses such a pod,
// so it can only be one created while the webhook was off).
func declaredPriorities(pod *corev1.Pod) []declared {
	out := make([]declared, len(pod.Spec.Containers))
	prios, errs := launchbarrier.Priorities(pod)
	if len(errs) > 0 {
		return out
	}
	ordered := pod.Annotations[launchbarrier.AnnotationPriority] == launchbarrier.OrderedValue
	for i := range pod.Spec.Containers {
		out[i] = declared{priority: prios[i], ok: ordered || hasEnv(&pod.Spec.Containers[i], launchbarrier.EnvPriority)}
	}
	return out
}

// priorityOf is the container's priority: its barrier's when it has a well-formed one, else the
// declared one.
func priorityOf(c *corev1.Container, d declared) (int, bool) {
	if b, ok, err := launchbarrier.BarrierOf(c); ok && err == nil {
		return b.Priority, true
	}
	return d.priority, d.ok
}

func hasEnv(c *corev1.Container, name string) bool {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return true
		}
	}
	return false
}
