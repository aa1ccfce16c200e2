package launchpriority

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
)

// level is the regular containers of one launch priority.
type level struct {
	priority int
	// keyed says whether the level has a key in the barrier ConfigMap. The
	// first level's containers carry no barrier when the webhook admitted
	// the pod (they start at once); its key is written all the same, as
	// OpenKruise's, when its priority can be told from the pod.
	keyed bool
	// gated says whether the containers read the key (carry a barrier).
	gated      bool
	containers []string
}

// plan is the launch order of a pod: the ConfigMap its barriers read and
// its levels, highest priority first. levels[0] starts without waiting.
type plan struct {
	configMap string
	levels    []level
}

// planOf reads the launch order of the pod from its containers' barrier
// env vars, which cannot change after creation. ok is false when no regular
// container has one; an error says why the barriers are not ones kruise
// writes (they were set while the webhook was not called).
func planOf(pod *corev1.Pod) (p plan, ok bool, err error) {
	gated := map[int][]string{}
	var ungated []string
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		b, has, err := lp.BarrierOf(c)
		if err != nil {
			return plan{}, true, err
		}
		if !has {
			ungated = append(ungated, c.Name)
			continue
		}
		if p.configMap != "" && p.configMap != b.ConfigMap {
			return plan{}, true, fmt.Errorf("containers read %s from two ConfigMaps, %q and %q", lp.EnvBarrier, p.configMap, b.ConfigMap)
		}
		p.configMap = b.ConfigMap
		gated[b.Priority] = append(gated[b.Priority], c.Name)
	}
	if len(gated) == 0 {
		return plan{}, false, nil
	}
	prios := make([]int, 0, len(gated))
	for pr := range gated {
		prios = append(prios, pr)
	}
	slices.Sort(prios)
	slices.Reverse(prios)
	if len(ungated) > 0 {
		top, known := topPriority(pod, ungated)
		p.levels = append(p.levels, level{priority: top, keyed: known && top > prios[0], containers: ungated})
	}
	for _, pr := range prios {
		p.levels = append(p.levels, level{priority: pr, keyed: true, gated: true, containers: gated[pr]})
	}
	return p, true, nil
}

// topPriority is the priority of the containers the webhook left without a
// barrier, as it computed it: the highest of theirs. known is false when
// the pod no longer says (a priority it cannot read).
func topPriority(pod *corev1.Pod, ungated []string) (top int, known bool) {
	prios, errs := lp.Priorities(pod)
	if len(errs) > 0 {
		return 0, false
	}
	top = lp.MinPriority
	for i := range pod.Spec.Containers {
		if slices.Contains(ungated, pod.Spec.Containers[i].Name) {
			top = max(top, prios[i])
		}
	}
	return top, true
}

// keys are the barrier keys of the first n levels.
func (p plan) keys(n int) []string {
	var out []string
	for _, l := range p.levels[:n] {
		if l.keyed {
			out = append(out, lp.Key(l.priority))
		}
	}
	return out
}

// released is the key of the lowest level whose containers read it and
// find it in cm, "" when none does yet.
func (p plan) released(cm *corev1.ConfigMap) string {
	out := ""
	for _, l := range p.levels {
		if !l.gated {
			continue
		}
		k := lp.Key(l.priority)
		if _, ok := cm.Data[k]; !ok {
			break
		}
		out = k
	}
	return out
}

// due counts the levels that may start: the first, and each next one once
// every container of every level above it is satisfied.
func (p plan) due(pod *corev1.Pod) int {
	for n := 1; n < len(p.levels); n++ {
		if len(p.blocking(pod, n)) > 0 {
			return n
		}
	}
	return len(p.levels)
}

// blocking lists the containers of the first n levels that are not
// satisfied: those level n waits for.
func (p plan) blocking(pod *corev1.Pod, n int) []string {
	var out []string
	for _, l := range p.levels[:n] {
		for _, c := range l.containers {
			if !satisfied(pod, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// priorityOf is the priority of the level holding container c.
func (p plan) priorityOf(c string) int {
	for _, l := range p.levels {
		if slices.Contains(l.containers, c) {
			return l.priority
		}
	}
	return 0
}

// below lists the containers of level n and after, in launch order.
func (p plan) below(n int) string {
	var out []string
	for _, l := range p.levels[n:] {
		out = append(out, l.containers...)
	}
	return strings.Join(out, ", ")
}

// satisfied reports whether the container lets the next levels start: it
// is Ready, or it has exited 0 in a pod that does not restart it (a
// run-to-completion container of a Job is never Ready again).
func satisfied(pod *corev1.Pod, name string) bool {
	for i := range pod.Status.ContainerStatuses {
		st := &pod.Status.ContainerStatuses[i]
		if st.Name != name {
			continue
		}
		if st.Ready {
			return true
		}
		t := st.State.Terminated
		return t != nil && t.ExitCode == 0 && pod.Spec.RestartPolicy != corev1.RestartPolicyAlways && pod.Spec.RestartPolicy != ""
	}
	return false
}

// configError reports whether a container with a barrier waits because the
// kubelet could not build its environment: after a restart of a completed
// pod this means its ConfigMap is gone.
func configError(pod *corev1.Pod, p plan) bool {
	for i := range pod.Status.ContainerStatuses {
		st := &pod.Status.ContainerStatuses[i]
		if w := st.State.Waiting; w != nil && w.Reason == "CreateContainerConfigError" && gatedContainer(p, st.Name) {
			return true
		}
	}
	return false
}

// gatedContainer reports whether container c reads a barrier key.
func gatedContainer(p plan, c string) bool {
	for _, l := range p.levels {
		if l.gated && slices.Contains(l.containers, c) {
			return true
		}
	}
	return false
}

// describe is the plan for logs: "10:[db] 5:[cache] 0:[app]".
func (p plan) describe() string {
	parts := make([]string, len(p.levels))
	for i, l := range p.levels {
		parts[i] = strconv.Itoa(l.priority) + ":[" + strings.Join(l.containers, " ") + "]"
	}
	return strings.Join(parts, " ")
}
