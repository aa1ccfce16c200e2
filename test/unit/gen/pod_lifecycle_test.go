package gen

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPodLifecycleModifiers(t *testing.T) {
	p := Pod("web", AddPodFinalizers("a"), AddPodFinalizers("b", "c"), SetPodLifecycleState("Normal"))
	assert.Equal(t, []string{"a", "b", "c"}, p.Finalizers)
	assert.Equal(t, map[string]string{"lifecycle.apps.kruise.io/state": "Normal"}, p.Labels)
}
