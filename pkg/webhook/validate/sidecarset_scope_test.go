package validate

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
)

type includes struct {
	names []string
	err   error
}

func (i *includes) Include(_ context.Context, ss *appsv1beta1.SidecarSet) error {
	i.names = append(i.names, ss.Name)
	return i.err
}

// A SidecarSet admitted is routed first (the injection webhook is called for its pods before
// it is stored); one refused, or in a dry run, is not; a failure to route admits it with a
// warning.
func TestSidecarSetWebhookRoutesWhatItAdmits(t *testing.T) {
	scope := &includes{}
	s := serve(t, SidecarSetWebhook(kruisefake.NewSimpleClientset().AppsV1beta1(), kubefake.NewClientset().AppsV1(), kruiseNamespace, nil, scope))
	resp := s.send(t, sidecarSetRequest(t, "v1beta1", logSidecarSet(), nil))
	require.True(t, resp.Allowed)
	assert.Equal(t, []string{"log"}, scope.names)

	bad := logSidecarSet(agent(func(c *appsv1beta1.SidecarContainer) { c.Image = "" }))
	require.False(t, s.send(t, sidecarSetRequest(t, "v1beta1", bad, nil)).Allowed)
	dry := sidecarSetRequest(t, "v1beta1", logSidecarSet(), nil)
	dry.DryRun = ptr.To(true)
	require.True(t, s.send(t, dry).Allowed)
	assert.Equal(t, []string{"log"}, scope.names, "neither a refused SidecarSet nor a dry run is routed")

	scope.err = errors.New("forbidden")
	resp = s.send(t, sidecarSetRequest(t, "v1beta1", logSidecarSet(), nil))
	require.True(t, resp.Allowed, "never refused for kruise's own failure")
	require.Len(t, resp.Warnings, 1)
	assert.Contains(t, resp.Warnings[0], "may miss its sidecars")
}
