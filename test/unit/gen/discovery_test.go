package gen

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPodResources(t *testing.T) {
	names := func(served bool) []string {
		var out []string
		for _, r := range PodResources(served).APIResources {
			out = append(out, r.Name)
		}
		return out
	}
	assert.Equal(t, []string{"pods", "pods/resize"}, names(true))
	assert.Equal(t, []string{"pods"}, names(false))
	assert.Equal(t, "v1", PodResources(false).GroupVersion)
}
