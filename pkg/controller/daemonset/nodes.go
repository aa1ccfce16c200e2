package daemonset

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/workload/podstate"
)

// NodeState is what the plans read of one node: whether it should run the pod, and the
// DaemonSet's pods for it (terminating ones included), oldest first.
type NodeState struct {
	Name        string
	Labels      map[string]string
	Eligibility Eligibility
	// Gone: no such node (pods still name it); its pods are deleted.
	Gone bool
	Pods []*corev1.Pod
}

// SortPods orders pods oldest first (name breaks ties), the order the plans keep or drop them in.
func SortPods(pods []*corev1.Pod) {
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// ManageOptions are what PlanManage needs beyond the nodes.
type ManageOptions struct {
	UpdateRevision  string
	MinReadySeconds int32
	Now             time.Time
	// Surge: the rolling update runs a new pod next to an old one (maxSurge > 0), so two pods
	// on a node, one of each revision, are not surplus.
	Surge bool
}

// ManagePlan is what keeps one pod on every node that should run one, whatever the update.
type ManagePlan struct {
	// Create names the nodes that should run a pod and have none (not even a terminating one),
	// by name.
	Create []string
	// Delete are pods on nodes that should not run them, on nodes that are gone, and surplus
	// pods on a node.
	Delete []*corev1.Pod
	// Ended are pods that failed or succeeded, on nodes that may keep a pod: they are deleted
	// (with a backoff per node) and the node gets a new pod once they are gone.
	Ended []*corev1.Pod
}

// PlanManage decides, node by node, as the built-in DaemonSet controller does: a node that
// should run the pod and has none gets one; a node that may keep its pod loses ended pods and
// all but its oldest running pod (with surge: all but the oldest of each revision, and the old
// one too once it is not ready or the new one is available); a node that may not keep it loses
// all of them. Terminating pods are left alone (deleting them again would only wait on them).
func PlanManage(nodes []NodeState, o ManageOptions) ManagePlan {
	var p ManagePlan
	for _, n := range nodes {
		if n.Gone || !n.Eligibility.ShouldContinueRunning {
			for _, pod := range n.Pods {
				if !Terminating(pod) {
					p.Delete = append(p.Delete, pod)
				}
			}
			continue
		}
		if len(n.Pods) == 0 {
			if n.Eligibility.ShouldRun {
				p.Create = append(p.Create, n.Name)
			}
			continue
		}
		var running []*corev1.Pod
		for _, pod := range n.Pods {
			switch {
			case Terminating(pod):
			case Ended(pod):
				p.Ended = append(p.Ended, pod)
			default:
				running = append(running, pod)
			}
		}
		p.Delete = append(p.Delete, surplus(running, o)...)
	}
	slices.Sort(p.Create)
	return p
}

// surplus are the running pods of one node to delete: all but the oldest, or with surge all but
// the oldest of the update revision and the oldest of any other, and that old one too when it is
// not ready or the new one is available (it has been replaced).
func surplus(running []*corev1.Pod, o ManageOptions) []*corev1.Pod {
	if len(running) <= 1 {
		return nil
	}
	SortPods(running)
	if !o.Surge {
		return slices.Clone(running[1:])
	}
	var out []*corev1.Pod
	var newest, oldest *corev1.Pod
	for _, pod := range running {
		switch {
		case podstate.Revision(pod) == o.UpdateRevision && newest == nil:
			newest = pod
		case podstate.Revision(pod) != o.UpdateRevision && oldest == nil:
			oldest = pod
		default:
			out = append(out, pod)
		}
	}
	if newest != nil && oldest != nil && (!Ready(oldest) || Available(newest, o.MinReadySeconds, o.Now)) {
		out = append(out, oldest)
	}
	return out
}

// PodsOnNode splits a node's pods into its pod of the update revision and its pod of another;
// ok is false when the node has more than one of either (PlanManage deletes the surplus first).
// Terminating and ended pods are not counted.
func PodsOnNode(pods []*corev1.Pod, updateRevision string) (updated, old *corev1.Pod, ok bool) {
	for _, pod := range pods {
		if Terminating(pod) || Ended(pod) {
			continue
		}
		if podstate.Revision(pod) == updateRevision {
			if updated != nil {
				return nil, nil, false
			}
			updated = pod
		} else {
			if old != nil {
				return nil, nil, false
			}
			old = pod
		}
	}
	return updated, old, true
}
