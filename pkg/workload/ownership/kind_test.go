package ownership

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSameKind(t *testing.T) {
	assert.True(t, SameKind("apps/v1", "Deployment", "apps/v1beta2", "Deployment"))
	assert.True(t, SameKind("apps.kruise.io/v1alpha1", "CloneSet", "apps.kruise.io/v1beta1", "CloneSet"))
	assert.False(t, SameKind("apps/v1", "StatefulSet", "apps.kruise.io/v1beta1", "StatefulSet"), "another group")
	assert.False(t, SameKind("apps/v1", "ReplicaSet", "apps/v1", "Deployment"))
	assert.False(t, SameKind("a/b/c", "X", "a/b/c", "X"), "malformed apiVersion")
}
