package revision

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
)

func TestResolveTemplated(t *testing.T) {
	old := stored(t, "v1", 1)
	tmpl := webTemplate("v2")
	f := newFixture([]*appsv1.ControllerRevision{old})
	got, err := f.history.ResolveTemplated(context.Background(), webOwner(), &tmpl, old.Name, nil)
	require.NoError(t, err)
	assert.Equal(t, old.Name, got.CurrentName())
	assert.NotEqual(t, old.Name, got.UpdateName())
	require.NotNil(t, got.Template(got.UpdateName()))
	assert.Equal(t, "v2", got.Template(got.UpdateName()).Spec.Containers[0].Image)
	assert.Equal(t, "v1", got.Template(got.CurrentName()).Spec.Containers[0].Image)
	assert.Nil(t, got.Template("unknown"))
	// A pod labelled with the hash alone (CloneSetShortHash) finds its revision's template.
	assert.Equal(t, "v1", got.Template(ShortHash(got.CurrentName())).Spec.Containers[0].Image)
	assert.Equal(t, "v2", got.Template(ShortHash(got.UpdateName())).Spec.Containers[0].Image)
	assert.Nil(t, got.Template(""))
}
