package podorder

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
)

// Priority is an UpdatePriorityStrategy ready to compare pods: its
// selectors parsed once.
type Priority struct {
	weights []weightTerm
	keys    []string
}

type weightTerm struct {
	weight   int64
	selector labels.Selector
}

// NewPriority parses s. A nil or empty s orders nothing. It is an error
// to set both weightPriority and orderPriority, or to give a selector the
// API server would not accept.
func NewPriority(s *pub.UpdatePriorityStrategy) (*Priority, error) {
	p := &Priority{}
	if s == nil {
		return p, nil
	}
	if len(s.WeightPriority) > 0 && len(s.OrderPriority) > 0 {
		return nil, errors.New("update priority: only one of weightPriority and orderPriority may be set")
	}
	for i, term := range s.WeightPriority {
		sel, err := metav1.LabelSelectorAsSelector(&term.MatchSelector)
		if err != nil {
			return nil, fmt.Errorf("update priority: weightPriority[%d].matchSelector: %w", i, err)
		}
		p.weights = append(p.weights, weightTerm{weight: int64(term.Weight), selector: sel})
	}
	for _, term := range s.OrderPriority {
		p.keys = append(p.keys, term.OrderedKey)
	}
	return p, nil
}

// priorityKey is where a pod stands in a Priority.
type priorityKey struct {
	// weight: the sum of the weights of the terms that match; higher first.
	weight int64
	// level: the index of the first ordered key the pod has, -1 when it
	// has none; lower first.
	level int
	// order: the number that ends the value of that key; higher first.
	order int64
}

func (p *Priority) key(pod *corev1.Pod) priorityKey {
	k := priorityKey{level: -1}
	set := labels.Set(pod.Labels)
	for _, t := range p.weights {
		if t.selector.Matches(set) {
			k.weight += t.weight
		}
	}
	for i, key := range p.keys {
		if v, ok := pod.Labels[key]; ok {
			k.level, k.order = i, trailingNumber(v)
			break
		}
	}
	return k
}

func comparePriorityKeys(a, b priorityKey) int {
	return cmp.Or(
		cmp.Compare(b.weight, a.weight),
		cmp.Compare(a.level, b.level),
		cmp.Compare(b.order, a.order),
	)
}

// Compare returns a negative number when a goes before b, a positive one
// when b goes before a, and 0 when the strategy cannot tell them apart.
//
// weightPriority: the higher sum of the weights of matching terms first.
// orderPriority: pods are grouped by the first term whose key they carry,
// earlier terms first; pods that carry none of the keys come before all of
// them, as in OpenKruise. Within a group the larger number that ends the
// label's value goes first: "o-10" before "o-9"; a value that does not end
// in digits, or whose digits overflow an int64, counts as 0.
func (p *Priority) Compare(a, b *corev1.Pod) int {
	return comparePriorityKeys(p.key(a), p.key(b))
}

// Sort returns a new slice of pods stably ordered by Compare: pods the
// strategy cannot tell apart keep their order. pods is left as it was.
func (p *Priority) Sort(pods []*corev1.Pod) []*corev1.Pod {
	type keyed struct {
		pod *corev1.Pod
		key priorityKey
	}
	ks := make([]keyed, len(pods))
	for i, pod := range pods {
		ks[i] = keyed{pod: pod, key: p.key(pod)}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return comparePriorityKeys(a.key, b.key) })
	out := make([]*corev1.Pod, len(ks))
	for i, k := range ks {
		out[i] = k.pod
	}
	return out
}

// trailingNumber is the decimal number that ends v ("sts-10" is 10, "5"
// is 5, "-3" is 3), or 0 when v ends in something else or the digits do
// not fit an int64: OpenKruise's reading of an ordered key's value.
func trailingNumber(v string) int64 {
	start := len(v)
	for start > 0 && v[start-1] >= '0' && v[start-1] <= '9' {
		start--
	}
	if start == len(v) {
		return 0
	}
	n, err := strconv.ParseInt(v[start:], 10, 64)
	if err != nil {
		return 0
	}
	return n
}
