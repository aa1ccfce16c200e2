package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
	"github.com/nodekruise/kruise/pkg/daemon/recorder"
)

func daemonClient(t *testing.T, c *cluster) *kube.Client {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(c.config)
	require.NoError(t, err)
	dc, err := kube.NewForConfigAndClient(c.config, httpClient)
	require.NoError(t, err)
	return dc
}

// testDaemonClient runs the daemon's own client (pkg/daemon/kube, which
// does not use the generated typed clients) against the API server: every
// request kind the daemon makes, on a built-in kind (protobuf) and on the
// CRDs (JSON).
func testDaemonClient(t *testing.T, c *cluster) {
	dc := daemonClient(t, c)
	cx := ctx(t)

	// A built-in kind: create, get, update, list with a field selector, watch.
	leases := dc.Leases(ns)
	lease, err := leases.Create(cx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kruise-daemon-it"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("it")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	got, err := leases.Get(cx, "kruise-daemon-it", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "it", *got.Spec.HolderIdentity)
	got.Spec.HolderIdentity = ptr.To("it-2")
	updated, err := leases.Update(cx, got, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "it-2", *updated.Spec.HolderIdentity)
	assert.NotEqual(t, lease.ResourceVersion, updated.ResourceVersion)
	list, err := leases.List(cx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector(metav1.ObjectNameField, "kruise-daemon-it").String()})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "kruise-daemon-it", list.Items[0].Name)
	w, err := leases.Watch(cx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, TimeoutSeconds: ptr.To[int64](30)})
	require.NoError(t, err)
	defer w.Stop()
	updated.Spec.HolderIdentity = ptr.To("it-3")
	_, err = leases.Update(cx, updated, metav1.UpdateOptions{})
	require.NoError(t, err)
	select {
	case e := <-w.ResultChan():
		require.Equal(t, watch.Modified, e.Type, "event %+v", e)
		assert.Equal(t, "it-3", *e.Object.(*coordinationv1.Lease).Spec.HolderIdentity)
	case <-cx.Done():
		t.Fatal("no watch event for the Lease update")
	}
	_, err = leases.Get(cx, "no-such-lease", metav1.GetOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not found")

	// A CRR's status, through the executor's client.
	crr, err := c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).Create(cx, newCRR("daemon-client"), metav1.CreateOptions{})
	require.NoError(t, err)
	crrs := dc.ContainerRecreateRequests(ns)
	crrList, err := crrs.List(cx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, crrList.Items)
	crr.Status.Phase = v1alpha1.ContainerRecreateRequestRecreating
	written, err := crrs.UpdateStatus(cx, crr, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.ContainerRecreateRequestRecreating, written.Status.Phase)
	stored, err := c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).Get(cx, crr.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, v1alpha1.ContainerRecreateRequestRecreating, stored.Status.Phase)

	// A NodeImage's status, through the puller's merge patch.
	_, err = c.kruise.AppsV1beta1().NodeImages().Create(cx, &v1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "daemon-client-node"}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	patched, err := dc.NodeImages().Patch(cx, "daemon-client-node", types.MergePatchType,
		[]byte(`{"status":{"desired":3,"succeeded":1}}`), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	assert.Equal(t, int32(3), patched.Status.Desired)
	assert.Equal(t, int32(1), patched.Status.Succeeded)
	niList, err := dc.NodeImages().List(cx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector(metav1.ObjectNameField, "daemon-client-node").String()})
	require.NoError(t, err)
	require.Len(t, niList.Items, 1)
	assert.Equal(t, int32(3), niList.Items[0].Status.Desired)

	// A NodePodProbe's status, through the prober's merge patch: the whole
	// list replaced, then cleared with null.
	_, err = c.kruise.AppsV1alpha1().NodePodProbes().Create(cx, &v1alpha1.NodePodProbe{ObjectMeta: metav1.ObjectMeta{Name: "daemon-client-node"}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	probed, err := dc.NodePodProbes().Patch(cx, "daemon-client-node", types.MergePatchType,
		[]byte(`{"status":{"podProbeStatuses":[{"name":"p","namespace":"ns","uid":"u1","probeStates":[`+
			`{"name":"m#idle","state":"Succeeded","lastProbeTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}]}]}}`),
		metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	require.Len(t, probed.Status.PodProbeStatuses, 1)
	assert.Equal(t, v1alpha1.ProbeSucceeded, probed.Status.PodProbeStatuses[0].ProbeStates[0].State)
	nppList, err := dc.NodePodProbes().List(cx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector(metav1.ObjectNameField, "daemon-client-node").String()})
	require.NoError(t, err)
	require.Len(t, nppList.Items, 1)
	require.Len(t, nppList.Items[0].Status.PodProbeStatuses, 1)
	cleared, err := dc.NodePodProbes().Patch(cx, "daemon-client-node", types.MergePatchType,
		[]byte(`{"status":{"podProbeStatuses":null}}`), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	assert.Empty(t, cleared.Status.PodProbeStatuses)
}

// testDaemonEvents runs the daemon's Event recorder against the API server:
// a first Event is created, an identical one bumps its count with a merge
// patch, and an Event on a cluster-scoped object lands in "default".
func testDaemonEvents(t *testing.T, c *cluster) {
	dc := daemonClient(t, c)
	cs, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	cx := ctx(t)

	rctx, stop := context.WithCancel(cx)
	defer stop()
	rec := recorder.New(rctx, recorder.Options{Sink: dc.EventSink(), Scheme: dc.Scheme(),
		Component: "kruise-daemon", Host: "it-node"})
	defer rec.Stop()

	crr, err := c.kruise.AppsV1alpha1().ContainerRecreateRequests(ns).Create(cx, newCRR("daemon-events"), metav1.CreateOptions{})
	require.NoError(t, err)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "it-node", UID: "it-node-uid"}}

	rec.Eventf(crr, corev1.EventTypeWarning, "ContainerNotFound", "container %q is not in the pod", "sidecar")
	waitForEvent(t, cs, ns, crr.Name, "ContainerNotFound", 1)
	rec.Eventf(crr, corev1.EventTypeWarning, "ContainerNotFound", "container %q is not in the pod", "sidecar")
	e := waitForEvent(t, cs, ns, crr.Name, "ContainerNotFound", 2)
	assert.Equal(t, "ContainerRecreateRequest", e.InvolvedObject.Kind)
	assert.Equal(t, "apps.kruise.io/v1alpha1", e.InvolvedObject.APIVersion)
	assert.Equal(t, crr.UID, e.InvolvedObject.UID)
	assert.Equal(t, corev1.EventSource{Component: "kruise-daemon", Host: "it-node"}, e.Source)
	assert.Equal(t, "container \"sidecar\" is not in the pod", e.Message)
	assert.True(t, !e.LastTimestamp.Before(&e.FirstTimestamp), "lastTimestamp %s before firstTimestamp %s",
		e.LastTimestamp, e.FirstTimestamp)

	rec.Event(node, corev1.EventTypeNormal, "Started", "kruise-daemon started")
	e = waitForEvent(t, cs, metav1.NamespaceDefault, "it-node", "Started", 1)
	assert.Equal(t, "Node", e.InvolvedObject.Kind)
	assert.Equal(t, "v1", e.InvolvedObject.APIVersion)
}

// waitForEvent waits until exactly one Event about name with reason exists
// in namespace, with the given count, and returns it.
func waitForEvent(t *testing.T, cs kubernetes.Interface, namespace, name, reason string, count int32) *corev1.Event {
	t.Helper()
	var last []corev1.Event
	var found *corev1.Event
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true,
		func(cx context.Context) (bool, error) {
			list, err := cs.CoreV1().Events(namespace).List(cx, metav1.ListOptions{FieldSelector: fields.Set{
				"involvedObject.name": name, "reason": reason}.String()})
			if err != nil {
				return false, nil
			}
			last = list.Items
			if len(list.Items) == 1 && list.Items[0].Count == count {
				found = &list.Items[0]
				return true, nil
			}
			return false, nil
		})
	require.NoError(t, err, fmt.Sprintf("waiting for one %s Event about %s/%s with count %d; last seen: %+v",
		reason, namespace, name, count, last))
	return found
}
