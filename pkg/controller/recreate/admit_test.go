package recreate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	kruisescheme "github.com/nodekruise/kruise/pkg/client/clientset/versioned/scheme"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
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

// admissionPatch is the body of the one write admission made: a JSON patch
// of the object (not its status).
func (f *fixture) admissionPatch(t *testing.T) string {
	t.Helper()
	writes := f.writes()
	require.Len(t, writes, 1)
	require.Equal(t, "patch", writes[0].GetVerb())
	assert.Empty(t, writes[0].GetSubresource())
	p := writes[0].(k8stesting.PatchAction)
	require.Equal(t, types.JSONPatchType, p.GetPatchType())
	return string(p.GetPatch())
}

func TestAdmitFills(t *testing.T) {
	crr := newCRR(time.Second, "main", "sidecar")
	crr.Labels = map[string]string{"user": "label"}
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})

	after, err := f.sync(t)
	require.NoError(t, err)
	assert.Zero(t, after)
	// Only what admission adds, after the resourceVersion read; label keys
	// escaped as JSON pointer tokens.
	assert.JSONEq(t, `[
		{"op": "replace", "path": "/metadata/resourceVersion", "value": "5"},
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
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, got.Status.Phase, "admission does not touch status")
	assert.True(t, admitted(got))
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
				{"op": "replace", "path": "/metadata/resourceVersion", "value": "5"},
				`+tc.want+`,
				{"op": "add", "path": "/spec/containers/0/statusContext", "value": {"containerID": "containerd://bbb", "restartCount": 0}}
			]`, f.admissionPatch(t))
			got := f.getCRR(t)
			for k, v := range tc.labels {
				if k != appsv1alpha1.ContainerRecreateRequestPodUIDKey {
					assert.Equal(t, v, got.Labels[k], k)
				}
			}
			assert.True(t, admitted(got))
		})
	}
}

// The unready-acquired annotation is added next to the creator's, and
// overwrites a value the creator gave it.
func TestAdmitAnnotationOps(t *testing.T) {
	crr := newCRR(time.Second, "sidecar")
	unreadyGrace(5)(crr)
	crr.Annotations = map[string]string{"user/note": "kept", appsv1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: "not-a-time"}
	crr.Labels = map[string]string{"user": "label"}
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{gatedPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
	_, err := f.sync(t)
	require.NoError(t, err)
	assert.JSONEq(t, `[
		{"op": "replace", "path": "/metadata/resourceVersion", "value": "5"},
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
// lists OpenKruise accepts (no ports; an exec hook without a command), and
// sidecar with neither field.
const crrJSON = `{
	"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
	"metadata": {"name": "restart-web", "namespace": "default", "uid": "crr-uid", "resourceVersion": "5",
		"creationTimestamp": "2025-03-04T05:06:06Z"},
	"spec": {"podName": "web", "containers": [
		{"name": "main", "ports": [], "preStop": {"exec": {"command": []}}},
		{"name": "sidecar"}
	]},
	"status": {"phase": "Pending"}
}`

// decodeCRR decodes data as the generated clientset does.
func decodeCRR(t *testing.T, data string) *appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	obj, _, err := kruisescheme.Codecs.UniversalDeserializer().Decode([]byte(data), nil, nil)
	require.NoError(t, err)
	return obj.(*appsv1alpha1.ContainerRecreateRequest)
}

// Fields the creator wrote as empty lists are left alone: "ports: []" says
// the container has none, and the set-once rules of the CRD would refuse a
// write that changed or dropped them. A container that leaves ports out gets
// the pod's.
func TestAdmitKeepsEmptyLists(t *testing.T) {
	crr := decodeCRR(t, crrJSON)
	// What the test rests on: an empty list decodes to an empty slice, an
	// absent one to nil.
	require.NotNil(t, crr.Spec.Containers[0].Ports)
	require.Empty(t, crr.Spec.Containers[0].Ports)
	require.NotNil(t, crr.Spec.Containers[0].PreStop.Exec.Command)
	require.Nil(t, crr.Spec.Containers[1].Ports)

	sidecarPorts := []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}}
	pod := withPod(func(p *corev1.Pod) { p.Spec.Containers[1].Ports = sidecarPorts })
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{pod}, crrs: []*appsv1alpha1.ContainerRecreateRequest{crr}})
	_, err := f.sync(t)
	require.NoError(t, err)
	patch := f.admissionPatch(t)
	assert.JSONEq(t, `[
		{"op": "replace", "path": "/metadata/resourceVersion", "value": "5"},
		{"op": "add", "path": "/metadata/labels", "value": {
			"crr.apps.kruise.io/active": "true", "crr.apps.kruise.io/node-name": "node-a", "crr.apps.kruise.io/pod-uid": "pod-uid-1"}},
		{"op": "add", "path": "/spec/containers/0/statusContext", "value": {"containerID": "containerd://aaa", "restartCount": 2}},
		{"op": "add", "path": "/spec/containers/1/statusContext", "value": {"containerID": "containerd://bbb", "restartCount": 0}},
		{"op": "add", "path": "/spec/containers/1/ports", "value": [{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}]}
	]`, patch)

	// The API server applies the patch to the object as stored, which keeps
	// the empty lists (the fake's tracker, holding Go objects, cannot).
	p, err := jsonpatch.DecodePatch([]byte(patch))
	require.NoError(t, err)
	patched, err := p.Apply([]byte(crrJSON))
	require.NoError(t, err)
	var before, after map[string]any
	require.NoError(t, json.Unmarshal([]byte(crrJSON), &before))
	require.NoError(t, json.Unmarshal(patched, &after))
	assert.NoError(t, setOnceRulesHold(before, after))
	main := containersOf(after)[0]
	assert.Equal(t, []any{}, main["ports"])
	assert.Equal(t, map[string]any{"exec": map[string]any{"command": []any{}}}, main["preStop"])
	assert.NotNil(t, main["statusContext"])
	assert.True(t, admitted(decodeCRR(t, string(patched))))

	got := f.getCRR(t)
	assert.Empty(t, got.Spec.Containers[0].Ports, "the pod's ports are not copied over the creator's []")
	assert.Equal(t, sidecarPorts, got.Spec.Containers[1].Ports)
	assert.Equal(t, []string{"Normal Admitted Admitted for pod web (uid pod-uid-1) on node node-a"}, f.events())
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
	}
}

// The set-once rules hold against what a full update would have sent: the
// check that TestAdmitKeepsEmptyLists relies on can fail.
func TestSetOnceRulesCatchAnUpdate(t *testing.T) {
	var before, sent map[string]any
	require.NoError(t, json.Unmarshal([]byte(crrJSON), &before))
	data, err := json.Marshal(decodeCRR(t, crrJSON))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &sent))
	err = setOnceRulesHold(before, sent)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ports")
	assert.Contains(t, err.Error(), "preStop")
}

// setOnceRulesHold checks, per container, the CRD's rules on preStop, ports
// and statusContext: once present, present and unchanged.
func setOnceRulesHold(old, cur map[string]any) error {
	var errs []error
	oldCtrs, curCtrs := containersOf(old), containersOf(cur)
	for i, o := range oldCtrs {
		for _, field := range []string{"preStop", "ports", "statusContext"} {
			ov, had := o[field]
			if !had {
				continue
			}
			if cv, has := curCtrs[i][field]; !has || !reflect.DeepEqual(ov, cv) {
				errs = append(errs, fmt.Errorf("containers[%d].%s: %v became %v", i, field, ov, cv))
			}
		}
	}
	return errors.Join(errs...)
}

func containersOf(obj map[string]any) []map[string]any {
	var out []map[string]any
	for _, c := range obj["spec"].(map[string]any)["containers"].([]any) {
		out = append(out, c.(map[string]any))
	}
	return out
}

// Map keys are escaped as JSON pointer tokens (RFC 6901).
func TestSetEntriesEscapes(t *testing.T) {
	var p jsonPatch
	p.setEntries("/metadata/annotations", map[string]string{"x": "y"}, map[string]string{"a/b~c": "1", "~1": "2"})
	assert.Equal(t, jsonPatch{
		{Op: "add", Path: "/metadata/annotations/a~1b~0c", Value: "1"},
		{Op: "add", Path: "/metadata/annotations/~01", Value: "2"},
	}, p)
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

// A request changed since the cache read it (here: a label added) is not
// admitted on that stale view: the patch carries the resourceVersion read,
// the server refuses it with a conflict, and the request is decided again
// (requeued), not rejected.
func TestAdmitConflictIsReturned(t *testing.T) {
	f := newFixture(t, objects{apiOnly: []*corev1.Pod{runningPod()}, crrs: []*appsv1alpha1.ContainerRecreateRequest{newCRR(time.Second, "main")}})
	f.setStored(t, func(c *appsv1alpha1.ContainerRecreateRequest) { c.Labels = map[string]string{"user": "label"} })
	_, err := f.sync(t)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "wrapped conflict: %v", err)
	assert.Len(t, f.writes(), 1, "the admission patch only")
	assert.Empty(t, f.events())
	got := f.getCRR(t)
	assert.Equal(t, "6", got.ResourceVersion)
	assert.Equal(t, map[string]string{"user": "label"}, got.Labels)
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, got.Status.Phase)
}

// A stale view can also make the patch not apply (a label added to a map
// that is gone by now), which the server answers as Invalid: the rejection
// that follows carries the resourceVersion read too, and fails with a
// conflict instead of completing the request.
func TestAdmitPatchNotApplyingToAChangedObjectIsNoReject(t *testing.T) {
	crr := newCRR(time.Second, "main")
	crr.Labels = map[string]string{"user": "label"}
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
