package statefulset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
)

// TestAPodWithAnUnreadableAnnotationDoesNotStallTheRollout: web-2, the first pod an ordered
// rollout takes, carries an in-place update state that does not decode. The pass does not fail:
// web-2 is left and reported, and the rollout goes on with web-1.
func TestAPodWithAnUnreadableAnnotationDoesNotStallTheRollout(t *testing.T) {
	old := statefulSet(3, "app:1", inPlace)
	oldRev := revisionOf(t, old, 1)
	set := statefulSet(3, "app:2", inPlace)
	bad := runningPod(t, set, oldRev, 2)
	bad.Annotations = map[string]string{pub.InPlaceUpdateStateKey: "{not json"}
	f := newFixture(t, set, oldRev, runningPod(t, set, oldRev, 0), runningPod(t, set, oldRev, 1), bad)
	_, err := f.ctrl.sync(testContext(t), testNS+"/"+set.Name)
	require.NoError(t, err, "one pod's annotation fails no pass")

	var updated []string
	for _, a := range f.kube.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetResource().Resource == "pods" && a.GetSubresource() == "" {
			updated = append(updated, u.GetObject().(*corev1.Pod).Name)
		}
		if p, ok := a.(k8stesting.PatchAction); ok && p.GetName() == bad.Name {
			t.Errorf("the bad pod was written: %v", a)
		}
	}
	assert.Equal(t, []string{"web-1"}, updated)
	events := f.events()
	assert.Contains(t, events, "Warning "+inplace.EventReasonUnreadableAnnotation+" pod web-2 ")
	assert.Contains(t, events, pub.InPlaceUpdateStateKey)
}
