package predownload

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/workload/podstate"
	"github.com/nodekruise/kruise/pkg/workload/revision"
)

// TemplatedMove is the Move of a workload whose history is h and whose pods, ready by podstate's
// rules, are pods (CloneSet, Advanced StatefulSet).
func TemplatedMove(h *revision.Templated, pods []*corev1.Pod) Move {
	ready := 0
	for _, pod := range pods {
		if revision.PodAt(pod, h.UpdateName()) && podstate.Ready(pod) {
			ready++
		}
	}
	return Move{Current: h.Current, Update: h.Update, CurrentTemplate: h.Template(h.CurrentName()),
		UpdateTemplate: h.Template(h.UpdateName()), UpdatedReady: ready}
}

// ServedHash is the hash of the update h's jobs serve while it is under way; "" once it is done,
// when no job serves anything.
func ServedHash(h *revision.Templated) string {
	if h.CurrentName() == h.UpdateName() {
		return ""
	}
	return h.Update.Labels[revision.HashLabel]
}
