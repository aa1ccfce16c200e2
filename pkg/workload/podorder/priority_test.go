package podorder_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/workload/podorder"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func weight(w int32, kv ...string) pub.UpdatePriorityWeightTerm {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return pub.UpdatePriorityWeightTerm{Weight: w, MatchSelector: metav1.LabelSelector{MatchLabels: m}}
}

func ordered(keys ...string) *pub.UpdatePriorityStrategy {
	s := &pub.UpdatePriorityStrategy{}
	for _, k := range keys {
		s.OrderPriority = append(s.OrderPriority, pub.UpdatePriorityOrderTerm{OrderedKey: k})
	}
	return s
}

func TestPrioritySort(t *testing.T) {
	cases := []struct {
		name     string
		strategy *pub.UpdatePriorityStrategy
		pods     []*corev1.Pod
		want     []string
	}{{
		name:     "nil strategy keeps the order",
		strategy: nil,
		pods:     []*corev1.Pod{pod("c"), pod("a"), pod("b")},
		want:     []string{"c", "a", "b"},
	}, {
		name: "weights of matching terms add up; higher first; equal keep their order",
		strategy: &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{
			weight(20, "k1", "foo"), weight(10, "k2", "bar"), weight(15, "k3", "baz"),
		}},
		pods: []*corev1.Pod{
			pod("none1"),
			pod("foo", labels("k1", "foo")),                  // 20
			pod("bar", labels("k2", "bar")),                  // 10
			pod("bar+baz", labels("k2", "bar", "k3", "baz")), // 25
			pod("none2", labels("k1", "other")),
			pod("all", labels("k1", "foo", "k2", "bar", "k3", "baz")), // 45
		},
		want: []string{"all", "bar+baz", "foo", "bar", "none1", "none2"},
	}, {
		name: "weights with match expressions",
		strategy: &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{{
			Weight: 50,
			MatchSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
			}},
		}}},
		pods: []*corev1.Pod{pod("c", labels("zone", "c")), pod("b", labels("zone", "b")), pod("none")},
		want: []string{"b", "c", "none"},
	}, {
		name:     "order values compare as numbers, larger first, not as strings",
		strategy: ordered("rank"),
		pods: []*corev1.Pod{
			pod("9", labels("rank", "o-9")), pod("10", labels("rank", "o-10")), pod("100", labels("rank", "o-100")),
			pod("2", labels("rank", "2")),
		},
		want: []string{"100", "10", "9", "2"},
	}, {
		name:     "an order value not ending in digits counts as 0",
		strategy: ordered("rank"),
		pods: []*corev1.Pod{
			pod("word", labels("rank", "abc")), pod("one", labels("rank", "x1")),
			pod("digits-first", labels("rank", "10a")), pod("zero", labels("rank", "0")),
		},
		want: []string{"one", "word", "digits-first", "zero"},
	}, {
		name:     "earlier keys first; pods with none of the keys before all (as OpenKruise)",
		strategy: ordered("first", "second"),
		pods: []*corev1.Pod{
			pod("second-5", labels("second", "5")),
			pod("first-1", labels("first", "1")),
			pod("both", labels("first", "2", "second", "100")),
			pod("none"),
			pod("first-3", labels("first", "3")),
		},
		want: []string{"none", "first-3", "both", "first-1", "second-5"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := podorder.NewPriority(tc.strategy)
			require.NoError(t, err)
			assert.Equal(t, tc.want, names(p.Sort(tc.pods)))
		})
	}
}

func TestPriorityCompare(t *testing.T) {
	p, err := podorder.NewPriority(&pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{weight(10, "a", "1")}})
	require.NoError(t, err)
	heavy, light := pod("heavy", labels("a", "1")), pod("light")
	assert.Negative(t, p.Compare(heavy, light))
	assert.Positive(t, p.Compare(light, heavy))
	assert.Zero(t, p.Compare(light, pod("other")))
}

func TestNewPriorityErrors(t *testing.T) {
	cases := map[string]*pub.UpdatePriorityStrategy{
		"both kinds": {
			WeightPriority: []pub.UpdatePriorityWeightTerm{weight(1, "a", "b")},
			OrderPriority:  []pub.UpdatePriorityOrderTerm{{OrderedKey: "k"}},
		},
		"bad operator": {WeightPriority: []pub.UpdatePriorityWeightTerm{weight(1, "a", "b"), {
			Weight: 1,
			MatchSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "a", Operator: "Near", Values: []string{"b"}},
			}},
		}}},
		"bad label key":   {WeightPriority: []pub.UpdatePriorityWeightTerm{weight(1, "not a key", "b")}},
		"bad label value": {WeightPriority: []pub.UpdatePriorityWeightTerm{weight(1, "a", "not a value!")}},
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := podorder.NewPriority(s)
			assert.Error(t, err)
			assert.Nil(t, p)
		})
	}
}

func TestPrioritySortLeavesInputAlone(t *testing.T) {
	p, err := podorder.NewPriority(ordered("rank"))
	require.NoError(t, err)
	pods := []*corev1.Pod{pod("a", labels("rank", "1")), pod("b", labels("rank", "3")), pod("c", gen.SetPodPhase(corev1.PodPending))}
	assertUnchanged(t, pods, func(in []*corev1.Pod) { p.Sort(in) })
}
