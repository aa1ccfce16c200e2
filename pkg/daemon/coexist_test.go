package daemon

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/contract/daemonlease"
	"github.com/nodekruise/kruise/pkg/daemon/coexist"
	"github.com/nodekruise/kruise/pkg/daemon/cri/critest"
	"github.com/nodekruise/kruise/pkg/daemon/kube/clientset"
	"github.com/nodekruise/kruise/test/unit/gen"
)

var (
	ownPodName = types.NamespacedName{Namespace: "kruise-system", Name: "kruise-daemon-me"}
	// openKruiseDaemon is a pod of OpenKruise's chart on node-a.
	openKruiseDaemon = gen.Pod("kruise-daemon-ok", gen.SetPodNamespace("kruise-system"), gen.SetPodUID("ok-uid"),
		gen.AddPodLabels(map[string]string{"control-plane": "daemon"}), gen.SetPodNodeName("node-a"),
		gen.AddPodContainer(corev1.Container{Name: "daemon", Image: "openkruise/kruise-manager:v1.9.0", Command: []string{"/kruise-daemon"}}),
		gen.SetPodPhase(corev1.PodRunning))
)

// ownDaemonPod is this daemon's pod, of DaemonSet UID ds-ours.
func ownDaemonPod() *corev1.Pod {
	return gen.Pod(ownPodName.Name, gen.SetPodNamespace(ownPodName.Namespace), gen.SetPodUID("me-uid"),
		gen.AddPodLabels(map[string]string{coexist.NameLabel: coexist.NameValue, coexist.PartOfLabel: coexist.PartOfValue}),
		gen.SetPodOwnerReferences(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "kruise-daemon",
			UID: "ds-ours", Controller: ptr.To(true)}),
		gen.SetPodNodeName("node-a"), gen.AddPodContainer(corev1.Container{Name: "daemon", Image: "kruise-daemon"}),
		gen.SetPodPhase(corev1.PodRunning))
}

// webPod runs container main (CRI ID aaa) on node-a; admittedCRR asks to
// recreate it.
func webPod() *corev1.Pod {
	return gen.Pod("web", gen.SetPodNamespace("default"), gen.SetPodUID("web-uid"), gen.SetPodNodeName("node-a"),
		gen.AddPodContainer(corev1.Container{Name: "main", Image: "busybox"}), gen.SetPodPhase(corev1.PodRunning),
		gen.SetPodContainerStatus(corev1.ContainerStatus{
			Name: "main", ContainerID: "containerd://aaa", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		}))
}

func admittedCRR() *appsv1alpha1.ContainerRecreateRequest {
	return gen.CRR("r", gen.SetCRRNamespace("default"), gen.SetCRRUID("crr-uid"), gen.SetCRRCreationTimestamp(time.Now()),
		gen.SetCRRRoutingLabels("node-a", "web-uid"), gen.SetCRRPodName("web"), gen.SetCRRContainers("main"),
		gen.SetCRRContainerContext("main", appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://aaa"}),
		gen.SetCRRAdmitted(time.Now(), ""))
}

// startFullDaemon runs the daemon with the CRR executor, the image puller
// and the heartbeat, on a fake CRI that runs webPod's container.
func startFullDaemon(t *testing.T, client *fake.Clientset) (*running, *critest.FakeRuntime) {
	t.Helper()
	rt := critest.NewFakeRuntime()
	rt.AddContainer(critest.Container{ID: "aaa", PodUID: "web-uid", PodNamespace: "default", PodName: "web", Name: "main",
		State: runtimeapi.ContainerState_CONTAINER_RUNNING})
	sock := filepath.Join(critest.ShortTempDir(t), "containerd.sock")
	critest.Serve(t, sock, rt)

	d := deps{client: clientset.New(client), kruiseClient: clientset.NewKruise(kruisefake.NewSimpleClientset(admittedCRR())), clock: clock.RealClock{},
		heartbeatClock: clock.RealClock{}, pod: ownPodName}
	r := runInBackground(t, testOptions("unix://"+sock), d)
	return r, rt
}

func heartbeatLease(t *testing.T, client *fake.Clientset) bool {
	t.Helper()
	_, err := client.CoordinationV1().Leases("kruise-system").Get(context.Background(), daemonlease.Name("node-a"), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

func conflictEvents(t *testing.T, client *fake.Clientset) []corev1.Event {
	t.Helper()
	list, err := client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var out []corev1.Event
	for _, e := range list.Items {
		if e.Reason == coexist.EventReason {
			out = append(out, e)
		}
	}
	return out
}

func podLists(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		if _, ok := a.(k8stesting.ListAction); ok && a.GetResource().Resource == "pods" {
			n++
		}
	}
	return n
}

// With OpenKruise's daemon on the node, the daemon is not ready, records a
// Warning Event on the Node, and neither executes CRRs nor heartbeats until
// that pod is gone.
func TestDaemonWaitsWhileOpenKruiseDaemonRuns(t *testing.T) {
	client := fake.NewClientset(node("node-a"), ownDaemonPod(), webPod(), openKruiseDaemon.DeepCopy())
	d, rt := startFullDaemon(t, client)

	var body string
	require.Eventually(t, func() bool {
		_, body = d.get(t, "/readyz?verbose")
		// The guard first reports that it has not checked the node's pods yet: wait for its verdict.
		return containsAll(body, "[+]crr ok", "[-]coexistence failed: kruise-daemon does not act on node")
	}, 10*time.Second, 20*time.Millisecond, "not ready while OpenKruise's daemon runs: %s", body)
	assert.Contains(t, body, `[-]coexistence failed: kruise-daemon does not act on node "node-a" while another node daemon runs there: `+
		`pod kruise-system/kruise-daemon-ok is OpenKruise's kruise-daemon (label control-plane=daemon, container "daemon" runs /kruise-daemon) `+
		`(uninstall OpenKruise's kruise-daemon, or turn it off (OpenKruise feature gate KruiseDaemon=false)`)

	var evs []corev1.Event
	require.Eventually(t, func() bool {
		evs = conflictEvents(t, client)
		return len(evs) > 0
	}, 10*time.Second, 20*time.Millisecond, "a ConflictingDaemon Event")
	assert.Equal(t, corev1.EventTypeWarning, evs[0].Type)
	assert.Equal(t, "Node", evs[0].InvolvedObject.Kind)
	assert.Equal(t, "node-a", evs[0].InvolvedObject.Name)
	assert.Contains(t, evs[0].Message, "Pod kruise-system/kruise-daemon-ok is OpenKruise's kruise-daemon")

	// The CRR informers have synced and the CRR is queued, but nothing acts.
	require.Never(t, func() bool { return len(rt.StopCalls()) > 0 || heartbeatLease(t, client) },
		300*time.Millisecond, 20*time.Millisecond, "acted while OpenKruise's daemon runs")

	require.NoError(t, client.CoreV1().Pods("kruise-system").Delete(context.Background(), "kruise-daemon-ok", metav1.DeleteOptions{}))
	d.eventually(t, "/readyz", http.StatusOK, "ready once OpenKruise's daemon is gone")
	require.Eventually(t, func() bool {
		calls := rt.StopCalls()
		return len(calls) == 1 && calls[0].ID == "aaa" && heartbeatLease(t, client)
	}, 10*time.Second, 20*time.Millisecond, "the CRR executor and the heartbeat start: stops %v", rt.StopCalls())
	assert.Len(t, conflictEvents(t, client), 1, "one Event per conflicting pod")
	assert.Equal(t, 1, podLists(client), "pods are listed once, by the informer")
}

// A conflicting daemon appearing while the daemon runs makes Run fail.
func TestDaemonStopsWhenAnotherDaemonAppears(t *testing.T) {
	// Another pod of our own DaemonSet (rolling update) does not count.
	sibling := ownDaemonPod()
	sibling.Name, sibling.UID = "kruise-daemon-old", "old-uid"
	client := fake.NewClientset(node("node-a"), ownDaemonPod(), sibling, webPod())
	d, _ := startFullDaemon(t, client)
	d.eventually(t, "/readyz", http.StatusOK, "ready when alone")
	require.Eventually(t, func() bool { return heartbeatLease(t, client) }, 10*time.Second, 20*time.Millisecond, "heartbeat")

	other := ownDaemonPod()
	other.Namespace, other.Name, other.UID = "kruise-2", "kruise-daemon-x", "x-uid"
	other.OwnerReferences[0].UID = "ds-other"
	_, err := client.CoreV1().Pods("kruise-2").Create(context.Background(), other, metav1.CreateOptions{})
	require.NoError(t, err)

	select {
	case err := <-d.done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), `another node daemon started on node "node-a": pod kruise-2/kruise-daemon-x is a kruise-daemon of another DaemonSet`)
		d.done <- err // for Cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon kept running beside another kruise daemon")
	}
	assert.Equal(t, 1, podLists(client), "pods are listed once, by the informer")
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
