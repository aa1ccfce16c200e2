package sidecarterminator

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
)

// The env vars that mark a container as a sidecar (OpenKruise's names, so
// existing pod templates keep working).
const (
	// EnvTerminateSidecar marks a sidecar when its value is "true" (any case).
	EnvTerminateSidecar = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT"
	// EnvTerminateSidecarWithImage marks a sidecar when non-empty; on a
	// virtual-kubelet node the sidecar's image is replaced by this one,
	// which must exit at once.
	EnvTerminateSidecarWithImage = "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE"
)

// sidecar is one container marked as a sidecar.
type sidecar struct {
	name string
	// image is the _WITH_IMAGE value, "" when unset or invalid.
	image string
}

// containers is a pod's regular containers sorted into mains and sidecars,
// with what was wrong in the markings.
type containers struct {
	mains    []string
	sidecars []sidecar
	// problems explain markings that were ignored or cannot be acted on;
	// each is reported by an Event.
	problems []string
}

// classify sorts the pod's regular containers. Init containers (native
// sidecars included) are never touched. A marking that cannot be read
// leaves the container a main: the pod then waits for it, as it would
// without kruise, and an Event says why.
func classify(pod *corev1.Pod) containers {
	var out containers
	for _, c := range pod.Spec.Containers {
		marked, image := false, ""
		for _, env := range c.Env {
			switch env.Name {
			case EnvTerminateSidecar:
				switch {
				case env.ValueFrom != nil:
					out.problems = append(out.problems, fmt.Sprintf("container %q: %s must have a literal value (valueFrom is not read); treated as a main container",
						c.Name, EnvTerminateSidecar))
				case strings.EqualFold(env.Value, "true"):
					marked = true
				case strings.EqualFold(env.Value, "false"):
				default:
					out.problems = append(out.problems, fmt.Sprintf("container %q: %s=%q is neither \"true\" nor \"false\"; treated as a main container",
						c.Name, EnvTerminateSidecar, env.Value))
				}
			case EnvTerminateSidecarWithImage:
				switch {
				case env.ValueFrom != nil:
					out.problems = append(out.problems, fmt.Sprintf("container %q: %s must have a literal value (valueFrom is not read); ignored",
						c.Name, EnvTerminateSidecarWithImage))
				case env.Value == "":
				default:
					marked = true
					if _, err := name.ParseReference(env.Value, name.WeakValidation); err != nil {
						out.problems = append(out.problems, fmt.Sprintf("container %q: %s=%q is not a valid image reference: %v",
							c.Name, EnvTerminateSidecarWithImage, env.Value, err))
					} else {
						image = env.Value
					}
				}
			}
		}
		if marked {
			out.sidecars = append(out.sidecars, sidecar{name: c.Name, image: image})
		} else {
			out.mains = append(out.mains, c.Name)
		}
	}
	return out
}

// hasMarking reports whether any regular container carries one of the env
// vars, whatever its value: only such pods are worth a look (and an Event
// when the value is wrong).
func hasMarking(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		for _, env := range c.Env {
			if env.Name == EnvTerminateSidecar || env.Name == EnvTerminateSidecarWithImage {
				return true
			}
		}
	}
	return false
}

// step is what to do about a pod.
type step int

const (
	// stepNone: nothing to do, now or later, unless the pod changes.
	stepNone step = iota
	// stepWait: the mains are still at work.
	stepWait
	// stepTerminate: every main is done and some sidecar is not; stop the
	// sidecars, recording plan.phase as the pod's outcome.
	stepTerminate
	// stepFollowUp: the pod's outcome was recorded by us; watch how the
	// sidecars end (plan.sidecars are those still not terminated).
	stepFollowUp
)

// plan is the decision about a pod.
type plan struct {
	step step
	// phase is the outcome the mains decided (stepTerminate).
	phase corev1.PodPhase
	// sidecars are the sidecars not terminated yet, in spec order.
	sidecars []sidecar
	// summary describes the mains' results, e.g. `main exited 0`.
	summary string
	// why explains stepNone for logs, e.g. "restartPolicy Always".
	why string
	containers
}

// decide works out what to do about a pod from its spec and status alone.
// It is recomputed on every sync; the state that makes it idempotent lives
// in the pod (its phase and the SidecarTerminated condition).
func decide(pod *corev1.Pod) plan {
	switch {
	case pod.Spec.RestartPolicy != corev1.RestartPolicyNever && pod.Spec.RestartPolicy != corev1.RestartPolicyOnFailure:
		return plan{why: "restartPolicy is Always"}
	case pod.DeletionTimestamp != nil:
		return plan{why: "pod is being deleted"}
	case !hasMarking(pod):
		return plan{why: "no container is marked as a sidecar"}
	}
	p := plan{containers: classify(pod)}
	if len(p.containers.sidecars) == 0 {
		p.why = "no container is marked as a sidecar"
		return p
	}
	if len(p.mains) == 0 {
		p.problems = append(p.problems, "every container is marked as a sidecar: there is no main container whose exit would stop them")
		p.why = "no main container"
		return p
	}
	statuses := make(map[string]*corev1.ContainerStatus, len(pod.Status.ContainerStatuses))
	for i := range pod.Status.ContainerStatuses {
		statuses[pod.Status.ContainerStatuses[i].Name] = &pod.Status.ContainerStatuses[i]
	}
	for _, sc := range p.containers.sidecars {
		if st := statuses[sc.name]; st == nil || st.State.Terminated == nil {
			p.sidecars = append(p.sidecars, sc)
		}
	}

	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		if recorded(pod) {
			p.step = stepFollowUp
			return p
		}
		p.why = "pod has finished"
		return p
	case corev1.PodRunning:
	default:
		p.why = fmt.Sprintf("pod phase is %q", pod.Status.Phase)
		return p
	}

	failed := false
	results := make([]string, 0, len(p.mains))
	for _, m := range p.mains {
		st := statuses[m]
		if st == nil || st.State.Terminated == nil {
			p.step = stepWait
			return p
		}
		code := st.State.Terminated.ExitCode
		if code != 0 {
			if pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure {
				// The kubelet runs it again: its last word is not said.
				p.step = stepWait
				return p
			}
			failed = true
		}
		results = append(results, fmt.Sprintf("%s exited %d", m, code))
	}
	p.summary = strings.Join(results, ", ")
	if len(p.sidecars) == 0 {
		// Every sidecar has ended on its own: the kubelet finishes the pod
		// and decides its phase, as it would without kruise.
		p.why = "every sidecar has already terminated"
		return p
	}
	p.step, p.phase = stepTerminate, corev1.PodSucceeded
	if failed {
		p.phase = corev1.PodFailed
	}
	return p
}

// recorded reports whether the SidecarTerminated condition is True: this
// controller recorded the pod's outcome.
func recorded(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == ConditionSidecarTerminated {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// names lists the sidecars' names.
func names(scs []sidecar) []string {
	out := make([]string, 0, len(scs))
	for _, sc := range scs {
		out = append(out, sc.name)
	}
	return out
}
