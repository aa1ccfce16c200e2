package podorder_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/workload/podorder"
)

func scatterTerm(key, value string) pub.UpdateScatterTerm {
	return pub.UpdateScatterTerm{Key: key, Value: value}
}

// podsLabelled is one pod per entry, named by its index, with the entry's
// labels.
func podsLabelled(entries ...[]string) []*corev1.Pod {
	pods := make([]*corev1.Pod, len(entries))
	for i, kv := range entries {
		pods[i] = pod(fmt.Sprint(i), labels(kv...))
	}
	return pods
}

func TestScatter(t *testing.T) {
	a := []string{"zone", "a"}
	b := []string{"rack", "b"}
	ab := []string{"zone", "a", "rack", "b"}
	none := []string{}
	cases := []struct {
		name     string
		pods     []*corev1.Pod
		strategy pub.UpdateScatterStrategy
		want     []string
	}{{
		name:     "two matching of six go to positions 1 and 4",
		pods:     podsLabelled(none, none, none, none, a, a),
		strategy: pub.UpdateScatterStrategy{scatterTerm("zone", "a")},
		want:     []string{"0", "4", "1", "2", "5", "3"},
	}, {
		name:     "three matching of nine, one in every three",
		pods:     podsLabelled(a, a, a, none, none, none, none, none, none),
		strategy: pub.UpdateScatterStrategy{scatterTerm("zone", "a")},
		want:     []string{"3", "0", "4", "5", "1", "6", "7", "2", "8"},
	}, {
		name:     "a single matching pod keeps its place",
		pods:     podsLabelled(a, none, none, none),
		strategy: pub.UpdateScatterStrategy{scatterTerm("zone", "a")},
		want:     []string{"0", "1", "2", "3"},
	}, {
		name:     "all matching keep their order",
		pods:     podsLabelled(a, a, a),
		strategy: pub.UpdateScatterStrategy{scatterTerm("zone", "a")},
		want:     []string{"0", "1", "2"},
	}, {
		name:     "the same key with another value does not match",
		pods:     podsLabelled([]string{"zone", "b"}, []string{"zone", "b"}, none),
		strategy: pub.UpdateScatterStrategy{scatterTerm("zone", "a")},
		want:     []string{"0", "1", "2"},
	}, {
		name: "no strategy keeps the order",
		pods: podsLabelled(a, a, none, none),
		want: []string{"0", "1", "2", "3"},
	}, {
		name:     "a repeated term is one term",
		pods:     podsLabelled(none, none, none, none, a, a),
		strategy: pub.UpdateScatterStrategy{scatterTerm("zone", "a"), scatterTerm("zone", "a")},
		want:     []string{"0", "4", "1", "2", "5", "3"},
	}, {
		// Classes: a {0,1}, b {2,3}, none {4..7}. Places in sixteenths:
		// a and b 4, 12; none 2, 6, 10, 14.
		name:     "two terms spread together",
		pods:     podsLabelled(a, a, b, b, none, none, none, none),
		strategy: pub.UpdateScatterStrategy{scatterTerm("zone", "a"), scatterTerm("rack", "b")},
		want:     []string{"4", "0", "2", "5", "6", "1", "3", "7"},
	}, {
		// Classes: a {0,1}, a+b {2,3}, b {4,5}: each spread over six.
		name:     "pods matching both terms are a class of their own",
		pods:     podsLabelled(a, a, ab, ab, b, b),
		strategy: pub.UpdateScatterStrategy{scatterTerm("zone", "a"), scatterTerm("rack", "b")},
		want:     []string{"0", "2", "4", "1", "3", "5"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, names(podorder.Scatter(tc.pods, tc.strategy)))
		})
	}
}

// For every size and number of matching pods, each prefix of the result
// holds its share of the matching pods to within one: any batch taken from
// the front of an update takes them in proportion. Matching pods keep
// their order, and so do the others.
func TestScatterSpreadsEvenly(t *testing.T) {
	for n := 2; n <= 24; n++ {
		for m := 2; m < n; m++ {
			var entries [][]string
			for i := range n {
				if i < m {
					entries = append(entries, []string{"zone", "a"})
				} else {
					entries = append(entries, nil)
				}
			}
			got := podorder.Scatter(podsLabelled(entries...), pub.UpdateScatterStrategy{scatterTerm("zone", "a")})
			matched, lastMatched, lastOther := 0, -1, -1
			for p, pod := range got {
				var idx int
				_, _ = fmt.Sscan(pod.Name, &idx)
				if pod.Labels["zone"] == "a" {
					matched++
					assert.Greater(t, idx, lastMatched, "n=%d m=%d: matching pods reordered", n, m)
					lastMatched = idx
				} else {
					assert.Greater(t, idx, lastOther, "n=%d m=%d: other pods reordered", n, m)
					lastOther = idx
				}
				share := float64((p+1)*m) / float64(n)
				assert.LessOrEqual(t, math.Abs(float64(matched)-share), 1.0, "n=%d m=%d prefix %d: %d matching", n, m, p+1, matched)
			}
			if 2*m <= n {
				for p := 1; p < n; p++ {
					assert.False(t, got[p].Labels["zone"] == "a" && got[p-1].Labels["zone"] == "a",
						"n=%d m=%d: matching pods next to each other at %d: %v", n, m, p, names(got))
				}
			}
		}
	}
}

func TestScatterLeavesInputAlone(t *testing.T) {
	pods := podsLabelled([]string{"zone", "a"}, []string{"zone", "a"}, nil, nil, nil)
	assertUnchanged(t, pods, func(in []*corev1.Pod) { podorder.Scatter(in, pub.UpdateScatterStrategy{scatterTerm("zone", "a")}) })
	assert.Empty(t, podorder.Scatter(nil, pub.UpdateScatterStrategy{scatterTerm("zone", "a")}))
}
