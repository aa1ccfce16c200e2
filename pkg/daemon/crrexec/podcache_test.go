package crrexec

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// The daemon's pod cache keeps only some fields of each pod
// (kube.SlimPod); the fixture puts pods in the cache the same way. These
// tests cover the pod fields the executor reads that the other tests do
// not reach, so that dropping one of them from the cache fails a test.

// The pod's own httpGet preStop hook (the CRR carries none) goes to the
// pod IP, on the port the container names.
func TestPodOwnHTTPPreStopUsesPodIPAndNamedPort(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/drain" {
			hits.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	host, portStr, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	port, err := strconv.Atoi(portStr)
	require.NoError(t, err)

	pod := runningPod(func(p *corev1.Pod) {
		p.Status.PodIP = host
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "admin", ContainerPort: int32(port)}}
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/drain", Port: intstr.FromString("admin")},
		}}
	})
	f := newFixture(t, pod, newCRR("r", time.Minute, "main"))
	f.sync(t)
	assert.Equal(t, int32(1), hits.Load(), "the pod's hook reached the pod IP on its named port")
	assert.Equal(t, []string{"stop " + mainID}, f.rt.calls())
	for _, e := range f.events() {
		assert.NotContains(t, e, "PreStopFailed")
	}
}

// A hostNetwork pod without an IP yet: the hook cannot run, and the Event
// says the pod is on the host network.
func TestPodOwnHTTPPreStopWithoutPodIP(t *testing.T) {
	pod := runningPod(func(p *corev1.Pod) {
		p.Status.PodIP = ""
		p.Spec.HostNetwork = true
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/drain", Port: intstr.FromInt32(8080)},
		}}
	})
	f := newFixture(t, pod, newCRR("r", time.Minute, "main"))
	f.sync(t)
	assert.Equal(t, []string{"stop " + mainID}, f.rt.calls(), "the container is stopped anyway")
	events := f.events()
	found := false
	for _, e := range events {
		found = found || (strings.Contains(e, "PreStopFailed") && strings.Contains(e, "hostNetwork=true"))
	}
	assert.True(t, found, "a PreStopFailed Event naming hostNetwork=true, got %q", events)
}

// A restart count above the one recorded at admission means the container
// was restarted already, even under the same container ID.
func TestHigherRestartCountCountsAsRecreated(t *testing.T) {
	pod := runningPod(gen.SetPodContainerStatus(runningStatus("main", "containerd://"+mainID, 1, true, tNow.Add(-time.Minute))))
	f := newFixture(t, pod, newCRR("r", time.Minute, "main"))
	f.sync(t)
	assert.Empty(t, f.rt.calls(), "not stopped a second time")
}

// A terminating pod is left to the controller.
func TestTerminatingPodIsLeftToTheController(t *testing.T) {
	pod := runningPod(func(p *corev1.Pod) {
		p.DeletionTimestamp = ptr.To(metav1.NewTime(tNow))
		p.DeletionGracePeriodSeconds = ptr.To[int64](30)
	})
	f := newFixture(t, pod, newCRR("r", time.Minute, "main"))
	f.sync(t)
	assert.Empty(t, f.rt.calls())
	assert.Equal(t, appsv1alpha1.ContainerRecreateRequestPending, f.get(t, "r").Status.Phase)
}
