package crr

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/crradmit"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// filledIn is crr with FillPatch for pod applied, as the webhook answers at
// create.
func filledIn(t *testing.T, crr *appsv1alpha1.ContainerRecreateRequest, pod *corev1.Pod) *appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	patch, ok, err := crradmit.FillPatch(crr, pod)
	require.NoError(t, err)
	require.True(t, ok, "a running pod is filled in")
	ops, err := jsonpatch.DecodePatch(patch)
	require.NoError(t, err)
	raw, err := json.Marshal(crr)
	require.NoError(t, err)
	raw, err = ops.Apply(raw)
	require.NoError(t, err)
	out := &appsv1alpha1.ContainerRecreateRequest{}
	require.NoError(t, json.Unmarshal(raw, out))
	return out
}

// The fill-in is what admission writes: the routing labels, each
// container's running instance, and main's preStop hook and ports.
func TestFillPatch(t *testing.T) {
	crr := newCRR(0, "main", "sidecar")
	crr.Labels = map[string]string{"app": "web", appsv1alpha1.ContainerRecreateRequestPodUIDKey: "forged"}
	got := filledIn(t, crr, runningPod())
	assert.Equal(t, map[string]string{
		"app": "web",
		appsv1alpha1.ContainerRecreateRequestPodUIDKey:   podUID,
		appsv1alpha1.ContainerRecreateRequestNodeNameKey: nodeName,
		appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}, got.Labels)
	main, side := got.Spec.Containers[0], got.Spec.Containers[1]
	assert.Equal(t, &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: mainID, RestartCount: 2}, main.StatusContext)
	assert.Equal(t, &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: sidecarID}, side.StatusContext)
	require.NotNil(t, main.PreStop)
	assert.Equal(t, []string{"sh", "-c", "sleep 1"}, main.PreStop.Exec.Command)
	assert.Equal(t, []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}, main.Ports)
	assert.Nil(t, side.PreStop)
	assert.Nil(t, side.Ports, "no ports: none written")
	assert.True(t, appsv1alpha1.IsRouted(got))

	// A pod that cannot be admitted now is left to the controller.
	for name, pod := range map[string]*corev1.Pod{
		"not scheduled": runningPod(func(p *corev1.Pod) { p.Spec.NodeName = ""; p.Status = corev1.PodStatus{Phase: corev1.PodPending} }),
		"not started":   runningPod(func(p *corev1.Pod) { p.Status.ContainerStatuses[1].ContainerID = "" }),
		"finished":      runningPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		"no container":  runningPod(func(p *corev1.Pod) { p.Spec.Containers = p.Spec.Containers[:1] }),
	} {
		patch, ok, err := crradmit.FillPatch(newCRR(0, "main", "sidecar"), pod)
		require.NoError(t, err, name)
		assert.False(t, ok, name)
		assert.Nil(t, patch, name)
	}
}

// A request the webhook filled in at create is admitted with its values: one
// status write, no patch of its metadata or spec, the values unchanged.
func TestAdmitKeepsWhatTheWebhookFilledIn(t *testing.T) {
	for name, pod := range map[string]*corev1.Pod{
		"same instance": runningPod(),
		// main restarted on its own between the webhook and the
		// controller: the request names the instance that ended since.
		"restarted since": runningPod(func(p *corev1.Pod) {
			st := &p.Status.ContainerStatuses[0]
			st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ContainerID: mainID, FinishedAt: metav1.NewTime(now)}
			st.ContainerID, st.RestartCount = "containerd://new", 3
		}),
	} {
		t.Run(name, func(t *testing.T) {
			crr := filledIn(t, newCRR(time.Second, "main", "sidecar"), runningPod())
			f := newFixture(t, objects{apiOnly: []*corev1.Pod{pod}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
			_, err := f.sync(t)
			require.NoError(t, err)
			writes := f.writes()
			require.Len(t, writes, 1, "only the Admitted condition")
			assert.Equal(t, "status", writes[0].GetSubresource())
			got := f.getCRR(t)
			assert.True(t, appsv1alpha1.IsAdmitted(got))
			assert.Equal(t, crr.Labels, got.Labels)
			assert.Equal(t, crr.Spec, got.Spec)
			assert.Equal(t, []string{"Normal Admitted Admitted for pod web (uid pod-uid-1) on node node-a"}, f.events())
		})
	}
}

// A statusContext naming an instance that ended before the request was
// created is no webhook's: it would "succeed" with nothing recreated.
func TestAdmitRejectsAStatusContextFromBeforeCreation(t *testing.T) {
	crr := filledIn(t, newCRR(time.Minute, "main"), runningPod())
	pod := runningPod(func(p *corev1.Pod) {
		st := &p.Status.ContainerStatuses[0]
		st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ContainerID: mainID, FinishedAt: metav1.NewTime(now.Add(-2 * time.Minute))}
		st.ContainerID, st.RestartCount = "containerd://new", 3
	})
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{pod}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
	_, err := f.sync(t)
	require.NoError(t, err)
	got := f.getCRR(t)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
	assert.Contains(t, got.Status.Message, "(set in: main.statusContext)")
}

// The webhook routes a request at create, so the daemon would see it as soon
// as it is admitted: it is admitted only once the older requests of its pod
// are routed.
func TestAdmitWebhookRoutedWaitsForOlder(t *testing.T) {
	older := gen.CRRFrom(newCRR(2*time.Second, "main"), gen.SetCRRName("older"))
	older.UID, older.ResourceVersion = "uid-older", "5"
	younger := filledIn(t, gen.CRRFrom(newCRR(time.Second, "sidecar"), gen.SetCRRName("younger")), runningPod())
	younger.UID, younger.ResourceVersion = "uid-younger", "6"
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{older, younger}})
	drain(f)
	_, ctx := ktesting.NewTestContext(t)

	_, err := f.ctrl.sync(ctx, testNS+"/younger")
	require.NoError(t, err)
	assert.Empty(t, f.writes(), "not admitted while the older one is not routed")

	_, err = f.ctrl.sync(ctx, testNS+"/older")
	require.NoError(t, err)
	got, err := f.kruise.AppsV1alpha1().ContainerRecreateRequests(testNS).Get(ctx, "older", metav1.GetOptions{})
	require.NoError(t, err)
	require.True(t, appsv1alpha1.IsRouted(got))
	require.NoError(t, f.ctrl.crrIndexer.Update(got))
	drain(f)
	f.ctrl.crrChanged(got)
	assert.Contains(t, drain(f), testNS+"/younger", "routing the older one enqueues the waiting one")

	_, err = f.ctrl.sync(ctx, testNS+"/younger")
	require.NoError(t, err)
	got, err = f.kruise.AppsV1alpha1().ContainerRecreateRequests(testNS).Get(ctx, "younger", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, appsv1alpha1.IsAdmitted(got))
}
