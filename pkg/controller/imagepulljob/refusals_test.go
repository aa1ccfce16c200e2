package imagepulljob

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRefusalsSetReportsChanges(t *testing.T) {
	r := newRefusals()
	_, ok := r.get("n1", "ns/a")
	assert.False(t, ok)
	assert.Empty(t, r.set("n1", nil), "nothing refused, nothing before")

	assert.Equal(t, nodeSet("ns/a", "ns/b"), r.set("n1", map[string]string{"ns/a": "too big", "ns/b": "too many tags"}))
	why, ok := r.get("n1", "ns/a")
	assert.True(t, ok)
	assert.Equal(t, "too big", why)
	_, ok = r.get("n2", "ns/a")
	assert.False(t, ok, "refusals are per node")

	assert.Empty(t, r.set("n1", map[string]string{"ns/a": "too big", "ns/b": "too many tags"}), "the same refusals change nothing")
	assert.Equal(t, nodeSet("ns/b", "ns/c"), r.set("n1", map[string]string{"ns/a": "too big", "ns/b": "too many owners", "ns/c": "too big"}),
		"a new reason and a new job are changes")
	assert.Equal(t, nodeSet("ns/a", "ns/c"), r.set("n1", map[string]string{"ns/b": "too many owners"}), "jobs no longer refused are changes")
	_, ok = r.get("n1", "ns/a")
	assert.False(t, ok)

	assert.Equal(t, nodeSet("ns/b"), r.set("n1", map[string]string{}), "an empty map clears the node")
	assert.Empty(t, r.byNode, "a node without refusals is not kept")
}

// Node syncs record refusals while job syncs read them (run with -race).
func TestRefusalsConcurrentUse(t *testing.T) {
	r := newRefusals()
	const nodes, rounds = 4, 300
	var wg sync.WaitGroup
	for n := range nodes {
		node := fmt.Sprintf("n%d", n)
		wg.Go(func() {
			for i := range rounds {
				refused := map[string]string{}
				if i%3 != 0 {
					refused[fmt.Sprintf("ns/j%d", i%5)] = fmt.Sprintf("reason %d", i)
				}
				r.set(node, refused)
			}
			r.set(node, map[string]string{"ns/last": "full"})
		})
		wg.Go(func() {
			for i := range rounds {
				if why, ok := r.get(node, fmt.Sprintf("ns/j%d", i%5)); ok {
					assert.NotEmpty(t, why)
				}
			}
		})
	}
	wg.Wait()
	for n := range nodes {
		why, ok := r.get(fmt.Sprintf("n%d", n), "ns/last")
		require.True(t, ok)
		assert.Equal(t, "full", why)
	}
}
