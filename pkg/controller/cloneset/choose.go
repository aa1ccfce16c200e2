package cloneset

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Orderer sorts pods, the first the most suitable (to delete, or to update); see pkg/workload/podorder.
type Orderer func([]*corev1.Pod) []*corev1.Pod

// Candidate is an active pod with its facts.
type Candidate struct {
	Pod   *corev1.Pod
	Facts PodFacts
}

// ChooseDeletes picks the pods a scale pass deletes under d: the pods asked to go, then as many
// as d.ScaleDown (old-revision pods first, d.ScaleDownOld of them), each in deletion order. An
// unavailable pod is always deleted when chosen; an available one only while d.DeleteReadyLimit
// lasts. A chosen pod held back by that limit still fills its place in the count, as the
// reference's choose-then-filter does: the pass waits for it rather than deleting another pod in
// its stead (which at the end of a surge rollout deleted the unready new pod instead of the last
// old one, and created it again, without end). Pods waiting on their preDelete hook are not
// chosen again.
func ChooseDeletes(d Diff, pods []Candidate, order Orderer) []*corev1.Pod {
	readyLeft := d.DeleteReadyLimit
	var out []*corev1.Pod
	take := func(c Candidate) {
		if c.Facts.Available {
			if readyLeft <= 0 {
				return
			}
			readyLeft--
		}
		out = append(out, c.Pod)
	}

	var asked, olds, news []*corev1.Pod
	facts := map[*corev1.Pod]PodFacts{}
	for _, c := range pods {
		facts[c.Pod] = c.Facts
		switch {
		case c.Facts.PreparingDelete:
		case c.Facts.SpecifiedDelete:
			asked = append(asked, c.Pod)
		case c.Facts.Updated:
			news = append(news, c.Pod)
		default:
			olds = append(olds, c.Pod)
		}
	}
	for _, p := range order(asked) {
		take(Candidate{p, facts[p]})
	}
	// pick chooses the first n of from in deletion order and reports the pods chosen, held back
	// or not.
	pick := func(from []*corev1.Pod, n int) []*corev1.Pod {
		sorted := order(from)
		chosen := sorted[:min(n, len(sorted))]
		for _, p := range chosen {
			take(Candidate{p, facts[p]})
		}
		return chosen
	}
	left := d.ScaleDown
	chosenOld := pick(olds, min(d.ScaleDownOld, left))
	left -= len(chosenOld)
	if left > 0 {
		left -= len(pick(news, left))
	}
	if left > 0 {
		// Fewer new pods than the count wants gone: the rest from the old ones left.
		var rest []*corev1.Pod
		for _, p := range olds {
			if !slices.Contains(chosenOld, p) {
				rest = append(rest, p)
			}
		}
		pick(rest, left)
	}
	return out
}

// ChooseUpdates picks, in update order, the old pods an update pass moves to the update
// revision: at most d.Update, and no more available pods than leave the CloneSet within
// d.UpdateMaxUnavailable. Updating a pod that is already unavailable costs nothing. candidates
// are the pods that may be updated now (old revision, not asked to go, not waiting on a hook,
// not in an in-place grace period); unavailable counts all active pods not available now.
func ChooseUpdates(d Diff, candidates []Candidate, unavailable int, order Orderer) []*corev1.Pod {
	facts := map[*corev1.Pod]PodFacts{}
	pods := make([]*corev1.Pod, 0, len(candidates))
	for _, c := range candidates {
		facts[c.Pod] = c.Facts
		pods = append(pods, c.Pod)
	}
	room := d.UpdateMaxUnavailable - unavailable
	var out []*corev1.Pod
	for _, p := range order(pods) {
		if len(out) == d.Update {
			break
		}
		if facts[p].Available {
			if room <= 0 {
				continue
			}
			room--
		}
		out = append(out, p)
	}
	return out
}
