package crr

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruisescheme "github.com/nodekruise/kruise/pkg/client/clientset/versioned/scheme"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/contract/crradmit"
	"github.com/nodekruise/kruise/test/unit/gen"
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
			name: "pod finished", containers: []string{"main"},
			pod:     runningPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
			message: `pod "web" has finished (phase "Succeeded"): its containers will not run again`,
		},
		{
			name: "pod failed, even before it was scheduled", containers: []string{"main"},
			pod:     runningPod(func(p *corev1.Pod) { p.Spec.NodeName = ""; p.Status = corev1.PodStatus{Phase: corev1.PodFailed} }),
			message: `pod "web" has finished (phase "Failed"): its containers will not run again`,
		},
		{
			name: "pod being deleted", containers: []string{"main"},
			pod:     runningPod(func(p *corev1.Pod) { p.DeletionTimestamp = ptr.To(metav1.NewTime(now)); p.Finalizers = []string{"x"} }),
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
			// Only spec.containers can be recreated: an init container,
			// a native sidecar too, is not found, and the message says why.
			name: "init container and native sidecar", containers: []string{"main", "init", "sc"},
			pod: runningPod(func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "init"}, {Name: "sc", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
			}),
			message: `containers not found in pod "web": init, sc`,
			perContainer: map[string]string{
				"main": `containers not found in pod "web": init, sc`,
				"init": `container "init" not found in pod "web": it is an init container, and only spec.containers can be recreated`,
				"sc":   `container "sc" not found in pod "web": it is a native sidecar (an init container with restartPolicy Always), and only spec.containers can be recreated`,
			},
		},
		{
			name: "unknown container of a pod still starting", containers: []string{"nope"},
			pod:     runningPod(func(p *corev1.Pod) { p.Status = corev1.PodStatus{Phase: corev1.PodPending} }),
			message: `containers not found in pod "web": nope`,
		},
		{
			// A statusContext that is not the pod's (the restart count
			// differs) is not the webhook's: the creator's.
			name: "statusContext set by the creator", containers: []string{"main", "sidecar"}, pod: runningPod(),
			mutate: func(c *appsv1alpha1.ContainerRecreateRequest) {
				c.Spec.Containers[0].StatusContext = &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: mainID, RestartCount: 1}
			},
			message: "spec.containers[].preStop, ports and statusContext are read-only: kruise-controller fills them in from the pod; leave them out (set in: main.statusContext)",
		},
		{
			// A hook of the creator's would run a command of their choosing
			// in the container: CRRs are no exec API.
			name: "preStop and ports set by the creator", containers: []string{"main", "sidecar"}, pod: runningPod(),
			mutate: func(c *appsv1alpha1.ContainerRecreateRequest) {
				c.Spec.Containers[0].PreStop = &appsv1alpha1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/var/run/secrets/kubernetes.io/serviceaccount/token"}}}
				c.Spec.Containers[1].Ports = []corev1.ContainerPort{}
			},
			message: "spec.containers[].preStop, ports and statusContext are read-only: kruise-controller fills them in from the pod; leave them out (set in: main.preStop, sidecar.ports)",
		},
		{
			name: "routing labels and statusContext copied from another request", containers: []string{"main"}, pod: runningPod(),
			mutate: func(c *appsv1alpha1.ContainerRecreateRequest) {
				c.Labels = map[string]string{
					appsv1alpha1.ContainerRecreateRequestNodeNameKey: nodeName, appsv1alpha1.ContainerRecreateRequestPodUIDKey: podUID,
					appsv1alpha1.ContainerRecreateRequestActiveKey: "true",
				}
				c.Spec.Containers[0].StatusContext = &appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://old", RestartCount: 1}
			},
			message: "spec.containers[].preStop, ports and statusContext are read-only: kruise-controller fills them in from the pod; leave them out (set in: main.statusContext)",
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
			assert.False(t, appsv1alpha1.IsAdmitted(got), "a rejected CRR is never admitted")
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

// A request whose pod is not running yet waits for it, and says so in its
// status, instead of failing: a pod and its CRR are often applied together.
func TestAdmitWaitsForThePodToStart(t *testing.T) {
	tests := []struct {
		name    string
		pod     *corev1.Pod
		message string
	}{
		{
			name:    "not scheduled",
			pod:     runningPod(func(p *corev1.Pod) { p.Spec.NodeName = ""; p.Status = corev1.PodStatus{Phase: corev1.PodPending} }),
			message: `waiting for the pod to start: pod "web" is not scheduled to a node yet`,
		},
		{
			name:    "pending",
			pod:     runningPod(func(p *corev1.Pod) { p.Status = corev1.PodStatus{Phase: corev1.PodPending} }),
			message: `waiting for the pod to start: pod "web" is not running yet (phase "Pending")`,
		},
		{
			name:    "a container without a containerID",
			pod:     runningPod(func(p *corev1.Pod) { p.Status.ContainerStatuses[1].ContainerID = "" }),
			message: `waiting for the pod to start: containers of pod "web" have not started yet: sidecar`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, objects{apiOnly: []*corev1.Pod{tc.pod}, crrs: []*appsv1alpha1.ContainerRecreateRequest{newCRR(time.Minute, "main", "sidecar")}})
			after, err := f.sync(t)
			require.NoError(t, err)
			assert.Equal(t, defaultPodStartWait-time.Minute, after, "looked at again when the wait ends, unless the pod changes first")

			writes := f.writes()
			require.Len(t, writes, 1)
			assert.Equal(t, "status", writes[0].GetSubresource())
			got := f.getCRR(t)
			assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, got.Status.Phase)
			assert.Equal(t, "5", got.Status.CreationRevision, "the creation revision is recorded at the first write")
			cond := appsv1alpha1.AdmittedCondition(got)
			require.NotNil(t, cond)
			assert.Equal(t, metav1.ConditionFalse, cond.Status)
			assert.Equal(t, appsv1alpha1.ContainerRecreateRequestReasonWaitingForPod, cond.Reason)
			assert.Equal(t, tc.message, cond.Message)
			assert.False(t, appsv1alpha1.IsAdmitted(got))
			assert.Empty(t, got.Labels, "not routed to any daemon yet")
			require.Len(t, f.events(), 1, "one WaitingForPod Event")

			// Nothing changed: nothing is written again.
			f.ctrl.crrIndexer.Update(got)
			f.kruise.ClearActions()
			_, err = f.sync(t)
			require.NoError(t, err)
			assert.Empty(t, f.writes())
			assert.Empty(t, f.events())

			// The pod runs: the request is admitted, its creation revision kept.
			_, err = f.kube.CoreV1().Pods(testNS).Update(context.Background(), runningPod(), metav1.UpdateOptions{})
			require.NoError(t, err)
			_, err = f.sync(t)
			require.NoError(t, err)
			got = f.getCRR(t)
			assert.True(t, appsv1alpha1.IsAdmitted(got))
			assert.True(t, appsv1alpha1.IsRouted(got))
			assert.Equal(t, "5", got.Status.CreationRevision)
			assert.Equal(t, []string{"Normal Admitted Admitted for pod web (uid pod-uid-1) on node node-a"}, f.events())
		})
	}
}

// The wait is bounded: by activeDeadlineSeconds, else by defaultPodStartWait.
func TestAdmitWaitIsBounded(t *testing.T) {
	pending := runningPod(func(p *corev1.Pod) { p.Status = corev1.PodStatus{Phase: corev1.PodPending} })
	t.Run("default bound", func(t *testing.T) {
		f := newFixture(t, objects{apiOnly: []*corev1.Pod{pending}, crrs: []*appsv1alpha1.ContainerRecreateRequest{newCRR(defaultPodStartWait, "main")}})
		_, err := f.sync(t)
		require.NoError(t, err)
		got := f.getCRR(t)
		assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
		assert.Equal(t, `pod "web" did not start within 10m0s (set activeDeadlineSeconds to wait longer): pod "web" is not running yet (phase "Pending")`, got.Status.Message)
	})
	t.Run("activeDeadlineSeconds", func(t *testing.T) {
		crr := newCRR(20*time.Minute, "main")
		crr.Spec.ActiveDeadlineSeconds = ptr.To[int64](3600)
		f := newFixture(t, objects{apiOnly: []*corev1.Pod{pending}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
		after, err := f.sync(t)
		require.NoError(t, err)
		assert.Equal(t, 40*time.Minute, after, "waits past the default, up to its deadline")
		assert.False(t, appsv1alpha1.IsAdmitted(f.getCRR(t)))

		f.clock.Step(40 * time.Minute)
		f.ctrl.crrIndexer.Update(f.getCRR(t))
		_, err = f.sync(t)
		require.NoError(t, err)
		got := f.getCRR(t)
		assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
		assert.Equal(t, "exceeded activeDeadlineSeconds (3600s)", got.Status.Message)
	})
}

// admissionPatch checks that admission wrote the status (the Admitted
// condition) first, then one JSON patch of the object, and returns the
// patch's body.
func (f *fixture) admissionPatch(t *testing.T) string {
	t.Helper()
	writes := f.writes()
	require.Len(t, writes, 2)
	require.Equal(t, "update", writes[0].GetVerb())
	assert.Equal(t, "status", writes[0].GetSubresource())
	require.Equal(t, "patch", writes[1].GetVerb())
	assert.Empty(t, writes[1].GetSubresource())
	p := writes[1].(k8stesting.PatchAction)
	require.Equal(t, types.JSONPatchType, p.GetPatchType())
	return string(p.GetPatch())
}

func TestAdmitFills(t *testing.T) {
	crr := newCRR(time.Second, "main", "sidecar")
	crr.Labels = map[string]string{"user": "label"}
	// A sleep hook has no field in the OpenKruise-compatible ProbeHandler:
	// it is left out of the copy (the daemon runs the pod's own hook).
	pod := runningPod(func(p *corev1.Pod) {
		p.Spec.Containers[1].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 3}}}
	})
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{pod}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})

	after, err := f.sync(t)
	require.NoError(t, err)
	assert.Zero(t, after)
	// Only what admission adds, after the resourceVersion the status write
	// left; label keys escaped as JSON pointer tokens.
	assert.JSONEq(t, `[
		{"op": "replace", "path": "/metadata/resourceVersion", "value": "6"},
		{"op": "add", "path": "/metadata/labels/crr.apps.kruise.io~1active", "value": "true"},
		{"op": "add", "path": "/metadata/labels/crr.apps.kruise.io~1node-name", "value": "node-a"},
		{"op": "add", "path": "/metadata/labels/crr.apps.kruise.io~1pod-uid", "value": "pod-uid-1"},
		{"op": "add", "path": "/spec/containers/0/statusContext", "value": {"containerID": "containerd://aaa", "restartCount": 2}},
		{"op": "add", "path": "/spec/containers/0/preStop", "value": {"exec": {"command": ["sh", "-c", "sleep 1"]}}},
		{"op": "add", "path": "/spec/containers/0/ports", "value": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]},
		{"op": "add", "path": "/spec/containers/1/statusContext", "value": {"containerID": "containerd://bbb", "restartCount": 0}}
	]`, f.admissionPatch(t))

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

	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, got.Status.Phase)
	assert.Equal(t, "5", got.Status.CreationRevision)
	assert.Equal(t, []metav1.Condition{{
		Type: appsv1alpha1.ContainerRecreateRequestAdmitted, Status: metav1.ConditionTrue,
		Reason: appsv1alpha1.ContainerRecreateRequestReasonAdmitted, Message: `pod "web" (uid pod-uid-1) runs on node "node-a"`,
		LastTransitionTime: metav1.NewTime(now),
	}}, got.Status.Conditions)
	assert.True(t, appsv1alpha1.IsAdmitted(got))
	assert.True(t, appsv1alpha1.IsRouted(got))
	assert.Equal(t, []string{"Normal Admitted Admitted for pod web (uid pod-uid-1) on node node-a"}, f.events())
}

// A CRR without labels gets the whole map; a label already right is not
// written again.
func TestAdmitLabelOps(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{
			name: "no labels", labels: nil,
			want: `{"op": "add", "path": "/metadata/labels", "value": {
				"crr.apps.kruise.io/active": "true", "crr.apps.kruise.io/node-name": "node-a", "crr.apps.kruise.io/pod-uid": "pod-uid-1"}}`,
		},
		{
			// A map that decodes empty may be "{}" on the server, or absent.
			name: "empty labels", labels: map[string]string{},
			want: `{"op": "add", "path": "/metadata/labels", "value": {
				"crr.apps.kruise.io/active": "true", "crr.apps.kruise.io/node-name": "node-a", "crr.apps.kruise.io/pod-uid": "pod-uid-1"}}`,
		},
		{
			name: "some already right", labels: map[string]string{
				appsv1alpha1.ContainerRecreateRequestNodeNameKey: nodeName, appsv1alpha1.ContainerRecreateRequestPodUIDKey: "garbage", "a~b/c": "user",
			},
			want: `{"op": "add", "path": "/metadata/labels/crr.apps.kruise.io~1active", "value": "true"},
				{"op": "add", "path": "/metadata/labels/crr.apps.kruise.io~1pod-uid", "value": "pod-uid-1"}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crr := newCRR(time.Second, "sidecar")
			crr.Labels = tc.labels
			f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
			_, err := f.sync(t)
			require.NoError(t, err)
			assert.JSONEq(t, `[
				{"op": "replace", "path": "/metadata/resourceVersion", "value": "6"},
				`+tc.want+`,
				{"op": "add", "path": "/spec/containers/0/statusContext", "value": {"containerID": "containerd://bbb", "restartCount": 0}}
			]`, f.admissionPatch(t))
			got := f.getCRR(t)
			for k, v := range tc.labels {
				if k != appsv1alpha1.ContainerRecreateRequestPodUIDKey {
					assert.Equal(t, v, got.Labels[k], k)
				}
			}
			assert.True(t, appsv1alpha1.IsRouted(got))
		})
	}
}

// The unready-acquired annotation is added next to the creator's, and
// overwrites a value the creator gave it.
func TestAdmitAnnotationOps(t *testing.T) {
	crr := gen.CRRFrom(newCRR(time.Second, "sidecar"), gen.SetCRRUnreadyGracePeriodSeconds(5))
	crr.Annotations = map[string]string{"user/note": "kept", appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: "not-a-time"}
	crr.Labels = map[string]string{"user": "label"}
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{gatedPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
	_, err := f.sync(t)
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"op": "replace", "path": "/metadata/resourceVersion", "value": "6"},
		{"op": "add", "path": "/metadata/annotations/crr.apps.kruise.io~1unready-acquired", "value": "`+now.Format(time.RFC3339)+`"},
		{"op": "add", "path": "/metadata/labels/crr.apps.kruise.io~1active", "value": "true"},
		{"op": "add", "path": "/metadata/labels/crr.apps.kruise.io~1node-name", "value": "node-a"},
		{"op": "add", "path": "/metadata/labels/crr.apps.kruise.io~1pod-uid", "value": "pod-uid-1"},
		{"op": "add", "path": "/spec/containers/0/statusContext", "value": {"containerID": "containerd://bbb", "restartCount": 0}}
	]`, f.admissionPatch(t))
	got := f.getCRR(t)
	assert.Equal(t, map[string]string{
		"user/note": "kept", appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: now.Format(time.RFC3339),
	}, got.Annotations)
}

// crrJSON is a CRR as its creator wrote it: container main with the empty
// lists OpenKruise's admission refuses too (no ports; an exec hook without a
// command), and sidecar with neither field.
const crrJSON = `{
	"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
	"metadata": {"name": "restart-web", "namespace": "default", "uid": "crr-uid", "resourceVersion": "5",
		"creationTimestamp": "2025-03-04T05:06:06Z"},
	"spec": {"podName": "web", "containers": [
		{"name": "main", "ports": [], "preStop": {"exec": {"command": []}}},
		{"name": "sidecar"}
	]}
}`

// decodeCRR decodes data as the generated clientset does.
func decodeCRR(t *testing.T, data string) *appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	obj, _, err := kruisescheme.Codecs.UniversalDeserializer().Decode([]byte(data), nil, nil)
	require.NoError(t, err)
	return obj.(*appsv1alpha1.ContainerRecreateRequest)
}

// Fields the creator wrote as empty lists are set all the same: "ports: []"
// or a hook that runs nothing are read-only fields given by the creator.
func TestAdmitRefusesEmptyListsToo(t *testing.T) {
	crr := decodeCRR(t, crrJSON)
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
	_, err := f.sync(t)
	require.NoError(t, err)
	got := f.getCRR(t)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
	assert.Contains(t, got.Status.Message, "(set in: main.preStop, main.ports)")
}

// Admission tells an absent list from an empty one by nil: that holds for
// CRRs as the controller gets them, decoded by the generated clientset in
// the informer's list (and watch), and for a DeepCopy of them.
func TestEmptyListsSurviveTheInformer(t *testing.T) {
	list := `{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequestList",
		"metadata": {"resourceVersion": "5"}, "items": [` + crrJSON + `]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/apps.kruise.io/v1alpha1/containerrecreaterequests" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			// No events: the watch stays open until the informer stops.
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		_, _ = io.WriteString(w, list)
	}))
	t.Cleanup(srv.Close)
	client, err := versioned.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	factory := kruiseinformers.NewSharedInformerFactory(client, 0)
	crrs := factory.Apps().V1alpha1().ContainerRecreateRequests()
	crrs.Informer()
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	factory.Start(stop)
	for typ, synced := range factory.WaitForCacheSync(stop) {
		require.True(t, synced, "%v", typ)
	}

	cached, err := crrs.Lister().ContainerRecreateRequests(testNS).Get(crrName)
	require.NoError(t, err)
	for name, crr := range map[string]*appsv1alpha1.ContainerRecreateRequest{"cached": cached, "deep copy": cached.DeepCopy()} {
		main, side := crr.Spec.Containers[0], crr.Spec.Containers[1]
		assert.NotNil(t, main.Ports, "%s: ports: [] is an empty slice", name)
		assert.Empty(t, main.Ports, name)
		if assert.NotNil(t, main.PreStop, name) && assert.NotNil(t, main.PreStop.Exec, name) {
			assert.NotNil(t, main.PreStop.Exec.Command, "%s: command: [] is an empty slice", name)
			assert.Empty(t, main.PreStop.Exec.Command, name)
		}
		assert.Nil(t, side.Ports, "%s: absent ports are nil", name)
		assert.Equal(t, []string{"main.preStop", "main.ports"}, crradmit.CreatorSetFields(crr), name)
	}
}

// A request changed since the cache read it (here: a label added) is not
// admitted on that stale view: the status write carries the resourceVersion
// read, the server refuses it with a conflict, and the request is decided
// again (requeued), not rejected.
func TestAdmitConflictIsReturned(t *testing.T) {
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{newCRR(time.Second, "main")}})
	f.setStored(t, func(c *appsv1alpha1.ContainerRecreateRequest) { c.Labels = map[string]string{"user": "label"} })
	_, err := f.sync(t)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "wrapped conflict: %v", err)
	assert.Len(t, f.writes(), 1, "the status write only")
	assert.Empty(t, f.events())
	got := f.getCRR(t)
	assert.Equal(t, "6", got.ResourceVersion)
	assert.False(t, appsv1alpha1.IsAdmitted(got))
}

// An admission cut short after its status write (a crash, a conflict) is
// finished by the next sync: the routing patch alone, from the live pod.
func TestAdmitFinishesARoutingCutShort(t *testing.T) {
	crr := admittedCRR(time.Second)
	crr.Labels = nil
	for i := range crr.Spec.Containers {
		crr.Spec.Containers[i].StatusContext = nil
	}
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
	_, err := f.sync(t)
	require.NoError(t, err)
	writes := f.writes()
	require.Len(t, writes, 1, "no second status write")
	assert.Equal(t, "patch", writes[0].GetVerb())
	got := f.getCRR(t)
	assert.True(t, appsv1alpha1.IsRouted(got))
	assert.Equal(t, podUID, got.Labels[appsv1alpha1.ContainerRecreateRequestPodUIDKey])
}

// Admitted for a pod that was then replaced (same name, new UID) before
// the routing was written: the request must not act on the new pod.
func TestAdmitCutShortForAReplacedPod(t *testing.T) {
	crr := admittedCRR(time.Second)
	crr.Labels = nil
	for i := range crr.Spec.Containers {
		crr.Spec.Containers[i].StatusContext = nil
	}
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod(func(p *corev1.Pod) { p.UID = "pod-uid-2" })}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
	_, err := f.sync(t)
	require.NoError(t, err)
	got := f.getCRR(t)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
	assert.Equal(t, "pod was replaced", got.Status.Message)
	assert.Empty(t, got.Labels)
}

// A stale view can also make the routing patch not apply (a label added to
// a map that is gone by now), which the server answers as Invalid: the
// rejection that follows carries the resourceVersion read too, and fails
// with a conflict instead of completing the request.
func TestAdmitPatchNotApplyingToAChangedObjectIsNoReject(t *testing.T) {
	crr := admittedCRR(time.Second)
	crr.Labels = map[string]string{"user": "label"}
	for i := range crr.Spec.Containers {
		crr.Spec.Containers[i].StatusContext = nil
	}
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
	f.setStored(t, func(c *appsv1alpha1.ContainerRecreateRequest) { c.Labels = nil })
	_, err := f.sync(t)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "wrapped conflict: %v", err)
	writes := f.writes()
	require.Len(t, writes, 2, "the patch, then the completion")
	assert.Equal(t, "patch", writes[0].GetVerb())
	assert.Equal(t, "status", writes[1].GetSubresource())
	assert.Empty(t, f.events())
	got := f.getCRR(t)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, got.Status.Phase)
	assert.Empty(t, got.Labels)
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
			assert.True(t, appsv1alpha1.IsAdmitted(got))
			assert.Equal(t, []string{"Normal Admitted Admitted for pod web (uid pod-uid-1) on node node-a"}, f.events())
		})
	}
}

// An admission patch the API server refuses as invalid (here: a node name
// too long for a label value) is not retried for ever: the request is
// completed with the server's reason.
func TestAdmitRefusedAsInvalidRejects(t *testing.T) {
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{newCRR(time.Second, "main")}})
	f.kruise.PrependReactor("patch", "containerrecreaterequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "apps.kruise.io", Kind: "ContainerRecreateRequest"}, crrName,
			field.ErrorList{field.Invalid(field.NewPath("metadata", "labels"), strings.Repeat("n", 64), "must be no more than 63 characters")})
	})
	_, err := f.sync(t)
	require.NoError(t, err)
	got := f.getCRR(t)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestCompleted, got.Status.Phase)
	assert.Contains(t, got.Status.Message, "the API server refused to admit the request: ")
	assert.Contains(t, got.Status.Message, "must be no more than 63 characters")
	require.Len(t, got.Status.ContainerRecreateStates, 1)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestFailed, got.Status.ContainerRecreateStates[0].Phase)
	assert.Empty(t, got.Labels, "never routed to a daemon")
	events := f.events()
	require.Len(t, events, 1)
	assert.Contains(t, events[0], "Warning InvalidRequest the API server refused to admit the request")
}

// The daemon runs the oldest request of a pod it sees, and sees one only
// once it is routed: requests of one pod are routed in creation order, so a
// younger one admitted first waits for the older one's routing.
func TestAdmitRoutesInCreationOrder(t *testing.T) {
	// Created in the same second; the older one sorts after by name.
	first := gen.CRRFrom(newCRR(time.Second, "main"), gen.SetCRRName("z-first"))
	first.UID, first.ResourceVersion = "uid-first", "5"
	second := gen.CRRFrom(newCRR(time.Second, "sidecar"), gen.SetCRRName("a-second"))
	second.UID, second.ResourceVersion = "uid-second", "6"
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{first, second}})
	drain(f)
	_, ctx := ktesting.NewTestContext(t)
	get := func(name string) *appsv1alpha1.ContainerRecreateRequest {
		t.Helper()
		crr, err := f.kruise.AppsV1alpha1().ContainerRecreateRequests(testNS).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return crr
	}

	_, err := f.ctrl.sync(ctx, testNS+"/a-second")
	require.NoError(t, err)
	got := get("a-second")
	assert.True(t, appsv1alpha1.IsAdmitted(got), "admitted")
	assert.False(t, appsv1alpha1.IsRouted(got), "not routed while z-first, older, is not")
	require.NoError(t, f.ctrl.crrIndexer.Update(got))

	_, err = f.ctrl.sync(ctx, testNS+"/z-first")
	require.NoError(t, err)
	got = get("z-first")
	assert.True(t, appsv1alpha1.IsRouted(got), "the oldest is routed at once")
	require.NoError(t, f.ctrl.crrIndexer.Update(got))
	drain(f)
	f.ctrl.crrChanged(got)
	assert.ElementsMatch(t, []string{testNS + "/z-first", testNS + "/a-second"}, drain(f), "routing the older one enqueues the waiting one")

	_, err = f.ctrl.sync(ctx, testNS+"/a-second")
	require.NoError(t, err)
	assert.True(t, appsv1alpha1.IsRouted(get("a-second")), "routed once the older one is")
	assert.Equal(t, "6", get("a-second").Status.CreationRevision)
	assert.Equal(t, "5", get("z-first").Status.CreationRevision)
}
