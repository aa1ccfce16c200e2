package cloneset

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// instanceIDLength is the length of an instance ID, the suffix of a pod's name that its PVCs
// carry too (label apps.kruise.io/cloneset-instance-id), which is how the next pod with that ID
// finds them.
const instanceIDLength = 5

// extraDraws and drawsPerID bound the random draws of InstanceIDs. While fewer than half of the
// 27^5 IDs are taken a draw is new at least every other time, so 4 draws an ID and 64 more are
// out of reach of bad luck; once the space is (nearly) full the search ends instead of spinning.
const (
	drawsPerID = 4
	extraDraws = 64
)

// InstanceIDs returns up to n instance IDs for new pods. The IDs first (those whose PVCs were
// made for a pod that could not be created, stranded.go) come first, unless a pod holds one or
// one of its PVCs is being deleted; then, with reuse, the IDs of PVCs whose pod is gone (oldest
// PVC first), so a new pod gets its predecessor's volumes; the rest are drawn at random, never
// one a pod or PVC already holds. random draws one candidate ID. The draws are bounded: when
// they find no more free IDs, fewer than n are returned. What it holds grows with the pods and
// PVCs that exist and with n, never with the replicas asked for.
func InstanceIDs(n int, pods []*corev1.Pod, pvcs []*corev1.PersistentVolumeClaim, reuse bool, random func() string, first ...string) []string {
	if random == nil {
		random = func() string { return utilrand.String(instanceIDLength) }
	}
	taken := sets.New[string]()
	for _, p := range pods {
		if id := p.Labels[appsv1beta1.CloneSetInstanceID]; id != "" {
			taken.Insert(id)
		}
	}
	var out []string
	if len(first) > 0 {
		// A PVC being deleted went with its pod: a new pod naming it would never start.
		dying := sets.New[string]()
		for _, c := range pvcs {
			if c.DeletionTimestamp != nil {
				dying.Insert(c.Labels[appsv1beta1.CloneSetInstanceID])
			}
		}
		for _, id := range first {
			if len(out) == n {
				break
			}
			if id == "" || taken.Has(id) || dying.Has(id) {
				continue
			}
			taken.Insert(id)
			out = append(out, id)
		}
	}
	if reuse {
		orphans := append([]*corev1.PersistentVolumeClaim(nil), pvcs...)
		sort.SliceStable(orphans, func(i, j int) bool {
			return orphans[i].CreationTimestamp.Before(&orphans[j].CreationTimestamp)
		})
		for _, c := range orphans {
			id := c.Labels[appsv1beta1.CloneSetInstanceID]
			if len(out) == n {
				break
			}
			// A PVC being deleted went with its pod: a new pod naming it would never start.
			if id == "" || taken.Has(id) || c.DeletionTimestamp != nil {
				continue
			}
			taken.Insert(id)
			out = append(out, id)
		}
	}
	for _, c := range pvcs {
		if id := c.Labels[appsv1beta1.CloneSetInstanceID]; id != "" {
			taken.Insert(id)
		}
	}
	for draws := drawsPerID*max(n-len(out), 0) + extraDraws; len(out) < n && draws > 0; draws-- {
		id := random()
		if taken.Has(id) {
			continue
		}
		taken.Insert(id)
		out = append(out, id)
	}
	return out
}

// deletionOverdue is how long past its deletion time a pod may remain before its replacement
// stops waiting for it: the kubelet removes a pod seconds after its grace period ends, so one
// still there a minute later is on a node that does not answer, and its replacement takes a new
// instance ID rather than wait for ever (OpenKruise #1099).
const deletionOverdue = time.Minute

// ReplacementsWaiting counts the pods being deleted (not overdue) that hold the instance ID of a
// PVC to reuse: reuse on, the PVC not being deleted with them, so deleted by someone else. Their
// replacements wait until they are gone, then take their names and PVCs; created at once, they
// would take new IDs and leave the PVCs unused. recheck is when the first of them becomes
// overdue (0: none waits).
func ReplacementsWaiting(pods []*corev1.Pod, pvcs []*corev1.PersistentVolumeClaim, reuse bool, now time.Time) (waiting int, recheck time.Duration) {
	if !reuse {
		return 0, 0
	}
	reusable := sets.New[string]()
	for _, c := range pvcs {
		if id := c.Labels[appsv1beta1.CloneSetInstanceID]; id != "" && c.DeletionTimestamp == nil {
			reusable.Insert(id)
		}
	}
	for _, p := range pods {
		if p.DeletionTimestamp == nil || !reusable.Has(p.Labels[appsv1beta1.CloneSetInstanceID]) {
			continue
		}
		left := p.DeletionTimestamp.Add(deletionOverdue).Sub(now)
		if left <= 0 {
			continue
		}
		waiting++
		if recheck == 0 || left < recheck {
			recheck = left
		}
	}
	return waiting, recheck
}

// ClaimName names the PVC of volume claim template vct for the pod of CloneSet cs with
// instance ID id: <vct>-<cloneset>-<id>.
func ClaimName(vct, cs, id string) string { return fmt.Sprintf("%s-%s-%s", vct, cs, id) }

// PodName names the pod of CloneSet cs with instance ID id: <cloneset>-<id>.
func PodName(cs, id string) string { return fmt.Sprintf("%s-%s", cs, id) }
