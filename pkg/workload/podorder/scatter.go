package podorder

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// Scatter returns a new slice of pods in which the pods that match each
// term of strategy (label key = value) are spread evenly over the
// sequence rather than bunched, so a batch of the update takes from each
// term's pods in proportion; pods is left as it was.
//
// Pods are put in classes by the set of terms they match (matching none
// is a class too). The k-th pod (from 0) of a class of n is given the
// place (k+½)/n of the sequence, and pods are sorted by that place: every
// class is spread evenly, the order within a class is kept (the priority
// order before it, among others), and ties keep the order given. Two
// matching pods of six go to positions 1 and 4. A term that matches
// fewer than two pods has nothing to spread and is ignored, so a single
// matching pod keeps its place.
//
// OpenKruise spreads one term at a time, the terms matching more pods
// first, and measures density over all of the workload's pods; this
// spreads every term together over the pods given, so that a later term
// cannot undo an earlier one.
func Scatter(pods []*corev1.Pod, strategy pub.UpdateScatterStrategy) []*corev1.Pod {
	terms := termsToScatter(pods, strategy)
	out := slices.Clone(pods)
	if len(terms) == 0 {
		return out
	}

	classOf := make([]string, len(pods))
	classSize := map[string]int{}
	for i, pod := range pods {
		classOf[i] = matchedTerms(pod, terms)
		classSize[classOf[i]]++
	}
	type placed struct {
		pod *corev1.Pod
		// The place is (2*nth+1) / (2*of); the 2s cancel in comparisons.
		nth, of int
	}
	places := make([]placed, len(pods))
	seen := map[string]int{}
	for i, pod := range pods {
		c := classOf[i]
		places[i] = placed{pod: pod, nth: seen[c], of: classSize[c]}
		seen[c]++
	}
	slices.SortStableFunc(places, func(a, b placed) int {
		return cmp.Compare((2*a.nth+1)*b.of, (2*b.nth+1)*a.of)
	})
	for i, p := range places {
		out[i] = p.pod
	}
	return out
}

// termsToScatter is the distinct terms of strategy that match at least two
// of pods, in the strategy's order.
func termsToScatter(pods []*corev1.Pod, strategy pub.UpdateScatterStrategy) []pub.UpdateScatterTerm {
	var terms []pub.UpdateScatterTerm
	for _, t := range strategy {
		if slices.Contains(terms, t) {
			continue
		}
		matches := 0
		for _, pod := range pods {
			if matchesTerm(pod, t) {
				matches++
			}
		}
		if matches >= 2 {
			terms = append(terms, t)
		}
	}
	return terms
}

func matchesTerm(pod *corev1.Pod, t pub.UpdateScatterTerm) bool {
	v, ok := pod.Labels[t.Key]
	return ok && v == t.Value
}

// matchedTerms names the class of pod: the indexes of the terms it
// matches.
func matchedTerms(pod *corev1.Pod, terms []pub.UpdateScatterTerm) string {
	var b strings.Builder
	for i, t := range terms {
		if matchesTerm(pod, t) {
			b.WriteString(strconv.Itoa(i))
			b.WriteByte(',')
		}
	}
	return b.String()
}
