package events

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

func TestWhile(t *testing.T) {
	t.Run("a recorder already set is kept", func(t *testing.T) {
		fr := record.NewFakeRecorder(1)
		var rec record.EventRecorder = fr
		ran := false
		require.NoError(t, While(context.Background(), fake.NewClientset(), &rec, func() { ran = true }))
		assert.True(t, ran)
		assert.Same(t, fr, rec.(*record.FakeRecorder))
	})
	t.Run("a nil recorder gets kruise-controller's for the run", func(t *testing.T) {
		var rec record.EventRecorder
		var during record.EventRecorder
		require.NoError(t, While(context.Background(), fake.NewClientset(), &rec, func() { during = rec }))
		assert.NotNil(t, during, "set while run runs")
	})
}
