package recreate

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func TestAdmitRejects(t *testing.T) {
	tests := []struct {
		name       string
		pod        *corev1.Pod
		containers []string
		message    string
		// perContainer is the message of each container's Failed state.
		perContainer map[string]string
		// mutate edits the CRR as its creator wrote it.
		mutate func(*appsv1alpha1.ContainerRecreateRequest)
	}{
		{
			name: "pod missing", containers: []string{"main"},
			message: `pod "web" not found`,
		},
		{
			name: "pod not scheduled", containers: []string{"main"},
			pod:     withPod(func(p *corev1.Pod) { p.Spec.NodeName = ""; p.Status = corev1.PodStatus{Phase: corev1.PodPending} }),
			message: `pod "web" is not scheduled to a node`,
		},
		{
			name: "pod not running", containers: []string{"main"},
			pod:     withPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
			message: `pod "web" is not running (phase "Succeeded")`,
		},
		{
			name: "pod being deleted", containers: []string{"main"},
			pod:     withPod(func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(now)); p.Finalizers = []string{"x"} }),
			message: `pod "web" is being deleted`,
		},
		{
			name: "unknown container", containers: []string{"main", "nope", "nada"}, pod: runningPod(),
			message: `containers not found in pod "web": nope, nada`,
			perContainer: map[string]string{
				"main": `containers not found in pod "web": nope, nada`,
				"nope": `container "nope" not found in pod "web"`,
				"nada": `container "nada" not found in pod "web"`,
			},
		},
		{
			name: "container without a containerID", containers: []string{"main", "sidecar"},
			pod:     withPod(func(p *corev1.Pod) { p.Status.ContainerStatuses[1].ContainerID = "" }),
			message: `containers without a containerID in pod "web": sidecar`,
			perContainer: map[string]string{
				"main":    `containers without a containerID in pod "web": sidecar`,
				"sidecar": `container "sidecar" has no containerID in the status of pod "web"`,
			},
		},
		{
			name: "unknown and not started together", containers: []string{"nope", "sidecar"},
			pod:     withPod(func(p *corev1.Pod) { p.Status.ContainerStatuses = p.Status.ContainerStatuses[:1] }),
			message: `containers not found in pod "web": nope; containers without a containerID in pod "web": sidecar`,
		},
		{
			// main runs with restartCount 2: an instance with count 2 or more and another ID
			// is none it has had, and would count as already recreated.
			name: "statusContext naming no instance of the container", containers: []string{"main", "sidecar"}, pod: runningPod(),
			mutate: func(c *appsv1alpha1.ContainerRecreateRequest) {
				c.Spec.Containers[0].StatusContext = &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://garbage", RestartCount: 2}
			},
			message: `containers whose statusContext names no instance of theirs in pod "web" (leave statusContext out: kruise fills it in): main`,
			perContainer: map[string]string{
				"main": `statusContext of container "main" (containerID "containerd://garbage", restartCount 2) names no instance it has had: it runs "containerd://aaa" with restartCount 2`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var o objects
			if tc.pod != nil {
				// Admission reads the API server, so a pod the cache lacks counts.
				o.apiOnly = []*corev1.Pod{tc.pod}
			}
			crr := newCRR(time.Second, tc.containers...)
			if tc.mutate != nil {
				tc.mutate(crr)
			}
			o.crrs = []*appsv1alpha1.ContainerRecreateRequest{crr}
			f := newFixture(t, o)

			after, err := f.sync(t)
			require.NoError(t, err)
			assert.Zero(t, after)

			writes := f.writes()
			require.Len(t, writes, 1)
			assert.Equal(t, "status", writes[0].GetSubresource(), "only a status write")
			got := f.getCRR(t)
			assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
			assert.Equal(t, tc.message, got.Status.Message)
			require.NotNil(t, got.Status.CompletionTime)
			assert.True(t, got.Status.CompletionTime.Time.Equal(now))
			assert.Empty(t, got.Labels, "a rejected CRR is never routed to a daemon")
			require.Len(t, got.Status.ContainerRecreateStates, len(tc.containers))
			for i, st := range got.Status.ContainerRecreateStates {
				assert.Equal(t, tc.containers[i], st.Name)
				assert.Equal(t, appsv1alpha1.ContainerRecreateRequestFailed, st.Phase)
				if m, ok := tc.perContainer[st.Name]; ok {
					assert.Equal(t, m, st.Message, st.Name)
				}
			}
			assert.Equal(t, []string{"Warning InvalidRequest " + tc.message}, f.events())
		})
	}
}

func TestAdmitFills(t *testing.T) {
	crr := newCRR(time.Second, "main", "sidecar")
	crr.Labels = map[string]string{"user": "label"}
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})

	after, err := f.sync(t)
	require.NoError(t, err)
	assert.Zero(t, after)
	writes := f.writes()
	require.Len(t, writes, 1)
	assert.Equal(t, "update", writes[0].GetVerb())
	assert.Empty(t, writes[0].GetSubresource())
	upd := writes[0].(k8stesting.UpdateAction).GetObject().(*appsv1alpha1.ContainerRecreateRequest)
	assert.Equal(t, "5", upd.ResourceVersion, "the update carries the resourceVersion read")

	got := f.getCRR(t)
	assert.Equal(t, map[string]string{
		"user": "label",
		appsv1alpha1.ContainerRecreateRequestNodeNameKey: nodeName,
		appsv1alpha1.ContainerRecreateRequestPodUIDKey:   podUID,
		appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}, got.Labels)
	main, side := got.Spec.Containers[0], got.Spec.Containers[1]
	assert.Equal(t, &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: mainID, RestartCount: 2}, main.StatusContext)
	assert.Equal(t, &appsv1alpha1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 1"}}}, main.PreStop)
	assert.Equal(t, []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}, main.Ports)
	assert.Equal(t, &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: sidecarID}, side.StatusContext)
	assert.Nil(t, side.PreStop)
	assert.Nil(t, side.Ports)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, got.Status.Phase, "admission does not touch status")
	assert.Equal(t, []string{"Normal Admitted Admitted for pod web (uid pod-uid-1) on node node-a"}, f.events())
}

// Fields already set are kept (they may be set only once), and a sleep
// preStop, which ProbeHandler cannot carry, is left out.
func TestAdmitKeepsSetFields(t *testing.T) {
	crr := newCRR(time.Second, "main", "sidecar")
	crr.Spec.Containers[0].StatusContext = &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://given"}
	pod := withPod(func(p *corev1.Pod) {
		p.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 3}}}
	})
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{pod}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
	_, err := f.sync(t)
	require.NoError(t, err)
	got := f.getCRR(t)
	assert.Equal(t, "containerd://given", got.Spec.Containers[0].StatusContext.ContainerID)
	assert.Nil(t, got.Spec.Containers[1].PreStop)
}

// A statusContext the creator gave that may name the current instance or an
// earlier one is accepted as it is.
func TestPastOrCurrent(t *testing.T) {
	st := &corev1.ContainerStatus{ContainerID: "containerd://now", RestartCount: 2}
	ctx := func(id string, n int32) *appsv1alpha1.ContainerRecreateRequestContainerContext {
		return &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: id, RestartCount: n}
	}
	assert.True(t, pastOrCurrent(nil, st), "not given")
	assert.True(t, pastOrCurrent(ctx("containerd://now", 2), st), "the current instance")
	assert.True(t, pastOrCurrent(ctx("containerd://before", 1), st), "an earlier instance")
	assert.False(t, pastOrCurrent(ctx("containerd://other", 2), st), "another ID with the current count")
	assert.False(t, pastOrCurrent(ctx("containerd://later", 7), st), "a count the container has not reached")
}

func TestAdmitConflictIsReturned(t *testing.T) {
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{newCRR(time.Second, "main")}})
	f.kruise.PrependReactor("update", "containerrecreaterequests", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps.kruise.io", Resource: "containerrecreaterequests"}, crrName, errors.New("stale"))
	})
	_, err := f.sync(t)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "wrapped conflict: %v", err)
	assert.Empty(t, f.events())
}

// Routing labels set by the creator (copied, or garbage) do not make a
// request admitted: admission runs and overwrites them.
func TestAdmitOverwritesLabelsSetByTheCreator(t *testing.T) {
	for name, labels := range map[string]map[string]string{
		"garbage pod-uid":              {appsv1alpha1.ContainerRecreateRequestPodUIDKey: "garbage"},
		"pod-uid and node-name preset": {appsv1alpha1.ContainerRecreateRequestPodUIDKey: "garbage", appsv1alpha1.ContainerRecreateRequestNodeNameKey: "elsewhere"},
	} {
		t.Run(name, func(t *testing.T) {
			crr := newCRR(time.Second, "main", "sidecar")
			crr.Labels = labels
			f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
			_, err := f.sync(t)
			require.NoError(t, err)
			got := f.getCRR(t)
			assert.Equal(t, map[string]string{
				appsv1alpha1.ContainerRecreateRequestNodeNameKey: nodeName,
				appsv1alpha1.ContainerRecreateRequestPodUIDKey:   podUID,
				appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
			}, got.Labels)
			assert.NotNil(t, got.Spec.Containers[1].StatusContext)
			assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, got.Status.Phase)
			assert.Equal(t, []string{"Normal Admitted Admitted for pod web (uid pod-uid-1) on node node-a"}, f.events())
		})
	}
}

func TestAdmitted(t *testing.T) {
	assert.True(t, admitted(admittedCRR(time.Second)))
	assert.False(t, admitted(newCRR(time.Second, "main")), "no labels")
	noContext := admittedCRR(time.Second, func(c *appsv1alpha1.ContainerRecreateRequest) { c.Spec.Containers[1].StatusContext = nil })
	assert.False(t, admitted(noContext), "a container without statusContext")
	noNode := admittedCRR(time.Second, func(c *appsv1alpha1.ContainerRecreateRequest) {
		delete(c.Labels, appsv1alpha1.ContainerRecreateRequestNodeNameKey)
	})
	assert.False(t, admitted(noNode), "no node-name label")
}

// An admission update the API server refuses as invalid is not retried for
// ever: the request is completed with the server's reason.
func TestAdmitRefusedAsInvalidRejects(t *testing.T) {
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{newCRR(time.Second, "main")}})
	f.kruise.PrependReactor("update", "containerrecreaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "apps.kruise.io", Kind: "ContainerRecreateRequest"}, crrName,
			field.ErrorList{field.Invalid(field.NewPath("spec", "containers").Index(0), "object", "preStop may be set once and cannot change afterwards")})
	})
	_, err := f.sync(t)
	require.NoError(t, err)
	got := f.getCRR(t)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
	assert.Contains(t, got.Status.Message, "the API server refused to admit the request")
	assert.Contains(t, got.Status.Message, "preStop may be set once")
	require.Len(t, got.Status.ContainerRecreateStates, 1)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestFailed, got.Status.ContainerRecreateStates[0].Phase)
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning InvalidRequest the API server refused to admit the request")
}
