package gen

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestWrites(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	actions := []k8stesting.Action{
		k8stesting.NewCreateAction(pods, "ns", Pod("a")),
		k8stesting.NewUpdateAction(pods, "ns", Pod("b")),
		k8stesting.NewGetAction(pods, "ns", "c"),
		k8stesting.NewCreateAction(secrets, "ns", &corev1.Secret{}),
		k8stesting.NewDeleteAction(pods, "ns", "d"),
	}
	assert.Equal(t, []string{"create a", "delete d"}, Writes(actions, "pods"))
}

func TestRevisionOtherThan(t *testing.T) {
	client := fake.NewClientset(ControllerRevision("web-1", SetControllerRevisionNamespace("ns")),
		ControllerRevision("web-2", SetControllerRevisionNamespace("ns")))
	rev, err := RevisionOtherThan(context.Background(), client, "ns", "web-1")
	require.NoError(t, err)
	assert.Equal(t, "web-2", rev.Name)
	_, err = RevisionOtherThan(context.Background(), client, "other", "web-1")
	assert.ErrorContains(t, err, "no ControllerRevision")
}
