package imagepulljob

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testPlan is a plan of key naming nodes.
func testPlan(key string, nodes ...string) *plan {
	p := &plan{key: key, uid: "uid-" + key, nodes: map[string]int64{}}
	for _, n := range nodes {
		p.nodes[n] = 0
	}
	return p
}

func nodeSet(items ...string) map[string]bool {
	out := map[string]bool{}
	for _, x := range items {
		out[x] = true
	}
	return out
}

// keysOf lists the keys of plans, sorted.
func keysOf(plans []*plan) []string {
	out := make([]string, 0, len(plans))
	for _, p := range plans {
		out = append(out, p.key)
	}
	sort.Strings(out)
	return out
}

// requireConsistent checks the store's invariant: a node is indexed for a
// key exactly when the key's plan names it, and no node is indexed with no
// key.
func requireConsistent(t *testing.T, s *planStore) {
	t.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	for n, keys := range s.byNode {
		require.NotEmpty(t, keys, "node %s is indexed with no key", n)
		for key := range keys {
			p := s.plans[key]
			require.NotNil(t, p, "node %s is indexed for %s, which has no plan", n, key)
			require.Contains(t, p.nodes, n, "node %s is indexed for %s, whose plan does not name it", n, key)
		}
	}
	for key, p := range s.plans {
		for n := range p.nodes {
			require.True(t, s.byNode[n][key], "plan %s names %s, which is not indexed for it", key, n)
		}
	}
}

func TestPlanStoreSetGetForNode(t *testing.T) {
	s := newPlanStore()
	assert.Nil(t, s.get("ns/a"))
	assert.Empty(t, s.forNode("n1"))
	assert.Empty(t, s.set("ns/a", nil), "removing a plan that is not there touches nothing")

	a1 := testPlan("ns/a", "n1", "n2")
	assert.Equal(t, nodeSet("n1", "n2"), s.set("ns/a", a1), "a new plan touches its nodes")
	assert.Same(t, a1, s.get("ns/a"))
	b := testPlan("ns/b", "n2")
	assert.Equal(t, nodeSet("n2"), s.set("ns/b", b))
	assert.Equal(t, []string{"ns/a", "ns/b"}, keysOf(s.forNode("n2")))
	requireConsistent(t, s)

	a2 := testPlan("ns/a", "n2", "n3")
	assert.Equal(t, nodeSet("n1", "n2", "n3"), s.set("ns/a", a2), "a replaced plan touches the old and the new nodes")
	assert.Same(t, a2, s.get("ns/a"))
	assert.Empty(t, s.forNode("n1"), "a node the new plan leaves is no longer indexed")
	assert.Equal(t, []string{"ns/a", "ns/b"}, keysOf(s.forNode("n2")))
	assert.Equal(t, []string{"ns/a"}, keysOf(s.forNode("n3")))
	requireConsistent(t, s)

	finished := &plan{key: "ns/a", uid: "uid-ns/a", finished: true}
	assert.Equal(t, nodeSet("n2", "n3"), s.set("ns/a", finished), "a finished plan names no node")
	assert.Same(t, finished, s.get("ns/a"), "a finished plan is kept")
	assert.Equal(t, []string{"ns/b"}, keysOf(s.forNode("n2")))
	assert.Empty(t, s.forNode("n3"))
	requireConsistent(t, s)

	assert.Empty(t, s.set("ns/a", nil))
	assert.Nil(t, s.get("ns/a"))
	assert.Equal(t, nodeSet("n2"), s.set("ns/b", nil))
	assert.Empty(t, s.forNode("n2"))
	requireConsistent(t, s)
	assert.Empty(t, s.plans)
	assert.Empty(t, s.byNode, "nothing is left indexed")
}

// The store's index agrees with its plans after any sequence of changes.
func TestPlanStoreRandomChangesKeepTheIndex(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	s := newPlanStore()
	want := map[string]*plan{}
	for i := range 2000 {
		key := fmt.Sprintf("ns/j%d", rnd.IntN(8))
		var p *plan
		if rnd.IntN(5) > 0 {
			var nodes []string
			for n := range rnd.IntN(6) {
				if rnd.IntN(2) == 0 {
					nodes = append(nodes, fmt.Sprintf("n%d", n))
				}
			}
			p = testPlan(key, nodes...)
		}
		wantTouched := map[string]bool{}
		for _, q := range []*plan{want[key], p} {
			if q != nil {
				for n := range q.nodes {
					wantTouched[n] = true
				}
			}
		}
		require.Equal(t, wantTouched, s.set(key, p), "step %d", i)
		if p == nil {
			delete(want, key)
		} else {
			want[key] = p
		}
		requireConsistent(t, s)
		for n := range 6 {
			node := fmt.Sprintf("n%d", n)
			var keys []string
			for k, q := range want {
				if _, ok := q.nodes[node]; ok {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			if keys == nil {
				keys = []string{}
			}
			require.Equal(t, keys, keysOf(s.forNode(node)), "step %d, node %s", i, node)
		}
	}
}

// Job workers publish plans while node workers read them (run with -race):
// a reader sees only whole, published plans that name the node it asked
// for, and the store ends with each job's last plan.
func TestPlanStoreConcurrentUse(t *testing.T) {
	s := newPlanStore()
	const writers, rounds, nodes = 4, 200, 5
	last := make([]*plan, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			key := fmt.Sprintf("ns/j%d", w)
			for r := range rounds {
				var p *plan
				if r%7 != 3 {
					p = testPlan(key, fmt.Sprintf("n%d", r%nodes), fmt.Sprintf("n%d", (r+w)%nodes))
					p.generation = int64(r)
				}
				s.set(key, p)
				last[w] = p
			}
		})
	}
	stop := make(chan struct{})
	errs := make(chan error, nodes)
	var readers sync.WaitGroup
	for n := range nodes {
		readers.Go(func() {
			node := fmt.Sprintf("n%d", n)
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				for _, p := range s.forNode(node) {
					if p == nil {
						errs <- fmt.Errorf("node %s listed a missing plan", node)
						return
					}
					if _, ok := p.nodes[node]; !ok {
						errs <- fmt.Errorf("node %s listed plan %s (generation %d), which does not name it", node, p.key, p.generation)
						return
					}
					_ = s.get(p.key) // read by key too, as the node sync does
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	for range nodes {
		require.NoError(t, <-errs)
	}
	requireConsistent(t, s)
	for w := range writers {
		key := fmt.Sprintf("ns/j%d", w)
		if last[w] == nil {
			assert.Nil(t, s.get(key), key)
		} else {
			assert.Same(t, last[w], s.get(key), key)
		}
	}
}
