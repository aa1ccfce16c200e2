package podorder

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// The rank of a pod in a domain (a node, or a topology domain such as a
// zone) is how many of the domain's pods would still be there if it and
// the pods ahead of it in the domain went: the domain's pods are ordered
// by the deletion criteria that come before the rank, and the k-th of n
// gets n-1-k. Taking the highest ranks first therefore takes from the
// most crowded domains first and levels them, rather than emptying the
// one domain that was crowded when the count was taken; the last pod of a
// domain ranks 0.

// rankByNode sets each scheduled pod's nodeRank among the pods on its node.
func rankByNode(facts []*podFacts) {
	byNode := map[string][]*podFacts{}
	for _, f := range facts {
		if !f.unassigned {
			byNode[f.pod.Spec.NodeName] = append(byNode[f.pod.Spec.NodeName], f)
		}
	}
	for _, group := range byNode {
		slices.SortStableFunc(group, func(a, b *podFacts) int {
			return cmp.Or(compareBeforeRank(a, b), compareAge(a, b))
		})
		for k, f := range group {
			f.nodeRank = len(group) - 1 - k
		}
	}
}

// rankBySpread adds to each pod's spreadRank its rank in its domain of
// every distinct topology key of constraints; a domain is the set of
// pods whose nodes have the same value for the key. This is the part of a
// topology spread constraint that scale-in can act on: the constraint's
// maxSkew, labelSelector and node policies are not read, because the pods
// given are the population to level. Within a domain the same-node rank
// decides before age, so a domain gives up pods from its most crowded
// node first. Pods on nodes without the key, or that nodes cannot find,
// are in no domain and gain nothing.
func rankBySpread(facts []*podFacts, constraints []corev1.TopologySpreadConstraint, nodes NodeGetter) {
	labels := nodeLabels(facts, nodes)
	seen := map[string]bool{}
	for _, c := range constraints {
		if seen[c.TopologyKey] {
			continue
		}
		seen[c.TopologyKey] = true
		byDomain := map[string][]*podFacts{}
		for _, f := range facts {
			if value, ok := labels[f.pod.Spec.NodeName][c.TopologyKey]; ok && !f.unassigned {
				byDomain[value] = append(byDomain[value], f)
			}
		}
		for _, group := range byDomain {
			slices.SortStableFunc(group, func(a, b *podFacts) int {
				return cmp.Or(compareBeforeRank(a, b), cmp.Compare(b.nodeRank, a.nodeRank), compareAge(a, b))
			})
			for k, f := range group {
				f.spreadRank += len(group) - 1 - k
			}
		}
	}
}

// nodeLabels looks up each node the pods run on once; a node not found
// (deleted, or not in the cache yet) has no labels.
func nodeLabels(facts []*podFacts, nodes NodeGetter) map[string]map[string]string {
	labels := map[string]map[string]string{}
	for _, f := range facts {
		name := f.pod.Spec.NodeName
		if _, done := labels[name]; done || name == "" {
			continue
		}
		labels[name] = nil
		if node, err := nodes.Get(name); err == nil && node != nil {
			labels[name] = node.Labels
		}
	}
	return labels
}
