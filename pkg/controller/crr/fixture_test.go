package crr

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/contract/daemonlease"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	testNS     = "default"
	kruiseNS   = "kruise-system"
	podName    = "web"
	podUID     = "pod-uid-1"
	nodeName   = "node-a"
	crrName    = "restart-web"
	mainID     = "containerd://aaa"
	sidecarID  = "containerd://bbb"
	fixtureKey = testNS + "/" + crrName
)

// now is the fake clock's time in every test.
var now = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

type fixture struct {
	ctrl     *Controller
	kube     *fake.Clientset
	kruise   *kruisefake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
}

// objects split by where they live: the API server and the caches (cached),
// or the API server only (apiOnly), to model a cache that lags.
type objects struct {
	pods    []*corev1.Pod
	apiOnly []*corev1.Pod
	leases  []*coordinationv1.Lease
	crrs    []*appsv1alpha1.ContainerRecreateRequest
}

func newFixture(t *testing.T, o objects) *fixture {
	t.Helper()
	var kubeObjs, kruiseObjs []runtime.Object
	for _, p := range o.pods {
		kubeObjs = append(kubeObjs, p)
	}
	for _, p := range o.apiOnly {
		kubeObjs = append(kubeObjs, p)
	}
	for _, l := range o.leases {
		kubeObjs = append(kubeObjs, l)
	}
	for _, c := range o.crrs {
		kruiseObjs = append(kruiseObjs, c)
	}
	f := &fixture{
		kube:     fake.NewClientset(kubeObjs...),
		kruise:   kruisefake.NewSimpleClientset(kruiseObjs...),
		clock:    clocktesting.NewFakeClock(now),
		recorder: record.NewFakeRecorder(10),
	}
	factory := informers.NewSharedInformerFactory(f.kube, 0)
	nsFactory := informers.NewSharedInformerFactoryWithOptions(f.kube, 0, informers.WithNamespace(kruiseNS))
	kruiseFactory := kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	ctrl, err := New(Config{
		Config:    ctrlbase.Config{Client: f.kube, KruiseClient: f.kruise, Recorder: f.recorder, Clock: f.clock},
		CRRs:      kruiseFactory.Apps().V1alpha1().ContainerRecreateRequests(),
		Pods:      factory.Core().V1().Pods(),
		Leases:    nsFactory.Coordination().V1().Leases(),
		Namespace: kruiseNS,
	})
	require.NoError(t, err)
	t.Cleanup(ctrl.queue.ShutDown)
	// The caches are filled by hand: no informer runs, nothing races.
	for _, p := range o.pods {
		require.NoError(t, factory.Core().V1().Pods().Informer().GetIndexer().Add(p))
	}
	for _, l := range o.leases {
		require.NoError(t, nsFactory.Coordination().V1().Leases().Informer().GetIndexer().Add(l))
		// The controller saw the Lease renewed when its renewTime says:
		// these tests run no node clock skew (liveness_test.go does).
		f.clock.SetTime(l.Spec.RenewTime.Time)
		ctrl.leaseChanged(l)
		f.clock.SetTime(now)
	}
	for _, c := range o.crrs {
		require.NoError(t, ctrl.crrIndexer.Add(c))
	}
	f.kube.ClearActions()
	f.kruise.ClearActions()
	f.kruise.PrependReactor("*", "containerrecreaterequests", serverWrites(f.kruise.Tracker()))
	f.ctrl = ctrl
	return f
}

var crrResource = appsv1alpha1.SchemeGroupVersion.WithResource("containerrecreaterequests")

// serverWrites makes the fake clientset write CRRs as the API server does,
// where its object tracker alone would not:
//   - A patch is applied to the JSON of the stored object; one that does not
//     apply is refused as Invalid (HTTP 422, as the server's patch handler
//     answers).
//   - A write whose object (for a patch: the patched object) carries a
//     resourceVersion other than the stored one is refused with a conflict,
//     and each write moves the resourceVersion on (the registry's
//     optimistic concurrency in Store.Update, after the patch is applied).
//   - Writes to the object keep its status; those to the status subresource
//     keep all but the status.
//   - Deletion preconditions are checked.
//
// It does not keep an empty list the stored object was written with: the
// tracker holds Go objects (TestAdmitKeepsEmptyLists covers that).
func serverWrites(tracker k8stesting.ObjectTracker) k8stesting.ReactionFunc {
	return func(action k8stesting.Action) (bool, runtime.Object, error) {
		var name string
		switch a := action.(type) {
		case k8stesting.UpdateAction:
			name = a.GetObject().(*appsv1alpha1.ContainerRecreateRequest).Name
		case k8stesting.PatchAction:
			name = a.GetName()
		case k8stesting.DeleteAction:
			name = a.GetName()
		default:
			return false, nil, nil
		}
		stored, err := tracker.Get(crrResource, action.GetNamespace(), name)
		if err != nil {
			return true, nil, err
		}
		cur := stored.(*appsv1alpha1.ContainerRecreateRequest)

		var next *appsv1alpha1.ContainerRecreateRequest
		switch a := action.(type) {
		case k8stesting.DeleteAction:
			if p := a.GetDeleteOptions().Preconditions; p != nil &&
				(p.UID != nil && *p.UID != cur.UID || p.ResourceVersion != nil && *p.ResourceVersion != cur.ResourceVersion) {
				return true, nil, apierrors.NewConflict(crrResource.GroupResource(), name, fmt.Errorf("precondition failed: %+v", *p))
			}
			return false, nil, nil // the tracker deletes
		case k8stesting.UpdateAction:
			next = a.GetObject().(*appsv1alpha1.ContainerRecreateRequest).DeepCopy()
		case k8stesting.PatchAction:
			doc, err := json.Marshal(cur)
			if err != nil {
				return true, nil, err
			}
			var patched []byte
			switch a.GetPatchType() {
			case types.JSONPatchType:
				p, err := jsonpatch.DecodePatch(a.GetPatch())
				if err != nil {
					return true, nil, apierrors.NewBadRequest(err.Error())
				}
				if patched, err = p.Apply(doc); err != nil {
					return true, nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
				}
			case types.MergePatchType:
				if patched, err = jsonpatch.MergePatch(doc, a.GetPatch()); err != nil {
					return true, nil, apierrors.NewBadRequest(err.Error())
				}
			default:
				return true, nil, fmt.Errorf("patch type %s not emulated", a.GetPatchType())
			}
			next = &appsv1alpha1.ContainerRecreateRequest{}
			if err := json.Unmarshal(patched, next); err != nil {
				return true, nil, apierrors.NewBadRequest(err.Error())
			}
		}
		if next.ResourceVersion != cur.ResourceVersion {
			return true, nil, apierrors.NewConflict(crrResource.GroupResource(), name,
				fmt.Errorf("the object has been modified (resourceVersion %s, written with %s)", cur.ResourceVersion, next.ResourceVersion))
		}
		if action.GetSubresource() == "status" {
			cur.Status = next.Status
			next = cur
		} else {
			next.Status = cur.Status
		}
		rv, err := strconv.ParseUint(cur.ResourceVersion, 10, 64)
		if err != nil {
			return true, nil, fmt.Errorf("stored resourceVersion %q: %w", cur.ResourceVersion, err)
		}
		next.ResourceVersion = strconv.FormatUint(rv+1, 10)
		if err := tracker.Update(crrResource, next, next.Namespace); err != nil {
			return true, nil, err
		}
		return true, next.DeepCopy(), nil
	}
}

// setStored replaces the API server's copy of the CRR (not the cache's),
// as a write by someone else would, moving its resourceVersion on.
func (f *fixture) setStored(t *testing.T, mut func(*appsv1alpha1.ContainerRecreateRequest)) {
	t.Helper()
	crr := f.getCRR(t)
	mut(crr)
	rv, err := strconv.ParseUint(crr.ResourceVersion, 10, 64)
	require.NoError(t, err)
	crr.ResourceVersion = strconv.FormatUint(rv+1, 10)
	require.NoError(t, f.kruise.Tracker().Update(crrResource, crr, crr.Namespace))
	f.kruise.ClearActions()
}

func (f *fixture) sync(t *testing.T) (time.Duration, error) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	return f.ctrl.sync(ctx, fixtureKey)
}

// writes lists the kruise client's calls other than reads.
func (f *fixture) writes() []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range f.kruise.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a)
		}
	}
	return out
}

func (f *fixture) events() []string {
	return gen.DrainEvents(f.recorder)
}

func (f *fixture) getCRR(t *testing.T) *appsv1alpha1.ContainerRecreateRequest {
	t.Helper()
	crr, err := f.kruise.AppsV1alpha1().ContainerRecreateRequests(testNS).Get(context.Background(), crrName, metav1.GetOptions{})
	require.NoError(t, err)
	return crr
}

// runningPod is a running pod with containers main (preStop exec, a port)
// and sidecar, changed by mods.
func runningPod(mods ...gen.PodModifier) *corev1.Pod {
	p := gen.Pod(podName, gen.SetPodNamespace(testNS), gen.SetPodUID(podUID), gen.SetPodNodeName(nodeName),
		gen.AddPodContainer(corev1.Container{
			Name:      "main",
			Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 1"}}}},
		}),
		gen.AddPodContainer(corev1.Container{Name: "sidecar"}),
		gen.SetPodPhase(corev1.PodRunning),
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "main", ContainerID: mainID, RestartCount: 2}),
		gen.SetPodContainerStatus(corev1.ContainerStatus{Name: "sidecar", ContainerID: sidecarID}))
	return gen.PodFrom(p, mods...)
}

// newCRR is a fresh request for the given containers, created age ago, as
// its creator wrote it (the API server drops status on create).
func newCRR(age time.Duration, containers ...string) *appsv1alpha1.ContainerRecreateRequest {
	return gen.CRR(crrName, gen.SetCRRNamespace(testNS), gen.SetCRRUID("crr-uid"), gen.SetCRRResourceVersion("5"),
		gen.SetCRRCreationTimestamp(now.Add(-age)), gen.SetCRRPodName(podName), gen.SetCRRContainers(containers...))
}

// admittedCRR is a request already admitted for runningPod, changed by mods.
func admittedCRR(age time.Duration, mods ...gen.CRRModifier) *appsv1alpha1.ContainerRecreateRequest {
	crr := gen.CRRFrom(newCRR(age, "main", "sidecar"),
		gen.SetCRRAdmitted(now.Add(-age), `pod "web" (uid pod-uid-1) runs on node "node-a"`),
		func(c *appsv1alpha1.ContainerRecreateRequest) { c.Status.CreationRevision = "4" },
		gen.SetCRRRoutingLabels(nodeName, podUID),
		gen.SetCRRContainerContext("main", appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: mainID, RestartCount: 2}),
		gen.SetCRRContainerContext("sidecar", appsv1alpha1.ContainerRecreateRequestContainerContext{ContainerID: sidecarID}))
	return gen.CRRFrom(crr, mods...)
}

// completedCRR is admittedCRR finished finishedAgo, both containers
// recreated, changed by mods.
func completedCRR(finishedAgo time.Duration, mods ...gen.CRRModifier) *appsv1alpha1.ContainerRecreateRequest {
	crr := admittedCRR(finishedAgo+time.Minute, gen.SetCRRPhase(appsv1alpha1.ContainerRecreateRequestCompleted),
		func(c *appsv1alpha1.ContainerRecreateRequest) {
			c.Status.CompletionTime = ptr.To(metav1.NewTime(now.Add(-finishedAgo)))
			c.Status.ContainerRecreateStates = []appsv1alpha1.ContainerRecreateRequestContainerRecreateState{
				{Name: "main", Phase: appsv1alpha1.ContainerRecreateRequestSucceeded},
				{Name: "sidecar", Phase: appsv1alpha1.ContainerRecreateRequestSucceeded},
			}
		})
	return gen.CRRFrom(crr, mods...)
}

// lease is the node's heartbeat, last renewed ago.
func lease(node string, ago time.Duration) *coordinationv1.Lease {
	return gen.Lease(daemonlease.Name(node), gen.SetLeaseNamespace(kruiseNS), gen.SetLeaseHolder(node),
		gen.SetLeaseRenewTime(now.Add(-ago)))
}
