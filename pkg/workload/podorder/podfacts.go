package podorder

import (
	"cmp"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// podFacts is what the orders read of one pod, read once per sort so that
// comparisons never walk conditions or parse annotations again.
type podFacts struct {
	pod *corev1.Pod

	unassigned bool
	phase      int
	ready      bool
	// readySince is when PodReady last turned true; zero when the pod is
	// not ready or the time is unknown.
	readySince      time.Time
	restarts        int32
	sidecarRestarts int32
	created         time.Time

	// Deletion only.
	unavailable  bool
	deletionCost int32
	spreadRank   int
	nodeRank     int
}

// phaseOrdinal puts the phases in the order their pods are given up:
// Pending (and any phase not named here) first, Running last.
func phaseOrdinal(p corev1.PodPhase) int {
	switch p {
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	default:
		return 0
	}
}

func readFacts(pod *corev1.Pod) podFacts {
	f := podFacts{
		pod:        pod,
		unassigned: pod.Spec.NodeName == "",
		phase:      phaseOrdinal(pod.Status.Phase),
		created:    pod.CreationTimestamp.Time,
	}
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.PodReady {
			f.ready = c.Status == corev1.ConditionTrue
			if f.ready {
				f.readySince = c.LastTransitionTime.Time
			}
			break
		}
	}
	for _, s := range pod.Status.ContainerStatuses {
		f.restarts = max(f.restarts, s.RestartCount)
	}
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	for _, s := range pod.Status.InitContainerStatuses {
		if sidecars[s.Name] {
			f.sidecarRestarts = max(f.sidecarRestarts, s.RestartCount)
		}
	}
	return f
}

// deletionCost reads the pod-deletion-cost annotation the way the
// Kubernetes controllers do: absent, or anything but a canonical int32
// (no "+", no leading zeros), is 0.
func deletionCost(pod *corev1.Pod) int32 {
	v, ok := pod.Annotations[corev1.PodDeletionCost]
	if !ok || !canonicalIntStart(v) {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// canonicalIntStart rejects the spellings ParseInt accepts but the
// annotation does not: an empty value, a leading "+", a leading zero.
func canonicalIntStart(v string) bool {
	switch {
	case v == "":
		return false
	case v[0] == '-', v == "0":
		return true
	default:
		return v[0] >= '1' && v[0] <= '9'
	}
}

// laterFirst orders times latest first, with an unknown (zero) time before
// every known one: a pod whose time is unknown is treated as the newest.
func laterFirst(a, b time.Time) int {
	switch {
	case a.Equal(b):
		return 0
	case a.IsZero():
		return -1
	case b.IsZero():
		return 1
	case a.After(b):
		return -1
	default:
		return 1
	}
}

// trueFirst orders true before false.
func trueFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

// byName is the last word of every order, so that pods equal by every
// criterion still come out the same whatever order they came in.
func byName(a, b *corev1.Pod) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Namespace, b.Namespace))
}

// compareScheduling is the head of both orders: not scheduled first, then
// by phase.
func compareScheduling(a, b *podFacts) int {
	return cmp.Or(
		trueFirst(a.unassigned, b.unassigned),
		cmp.Compare(a.phase, b.phase),
	)
}

// compareAge is the tail of both orders: ready for less time, more
// restarts, newer, then by name.
func compareAge(a, b *podFacts) int {
	if a.ready && b.ready {
		if c := laterFirst(a.readySince, b.readySince); c != 0 {
			return c
		}
	}
	return cmp.Or(
		cmp.Compare(b.restarts, a.restarts),
		cmp.Compare(b.sidecarRestarts, a.sidecarRestarts),
		laterFirst(a.created, b.created),
		byName(a.pod, b.pod),
	)
}
