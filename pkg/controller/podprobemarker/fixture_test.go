package podprobemarker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	ns       = "ns"
	nodeName = "node-a"
	nodeUID  = types.UID("node-uid")
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// ---- pods ----

// probedPod is a running, initialized pod of ns on nodeName with IP ip, labelled app=web, whose
// container main declares port http (8080).
func probedPod(name string, uid types.UID, ip string, mods ...gen.PodModifier) *corev1.Pod {
	p := gen.Pod(name, gen.SetPodNamespace(ns), gen.SetPodUID(uid), gen.SetPodNodeName(nodeName),
		gen.AddPodLabels(map[string]string{"app": "web"}), gen.SetPodPhase(corev1.PodRunning), gen.SetPodIP(ip),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}),
		gen.AddPodContainer(gen.Container("main", gen.AddContainerPort("http", 8080), gen.AddContainerPort("", 9000))))
	return gen.PodFrom(p, mods...)
}

var notInitialized = gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse})

// ---- probes and markers ----

func execProbe(name string) appsv1alpha1.PodContainerProbe {
	return appsv1alpha1.PodContainerProbe{Name: name, ContainerName: "main", PodConditionType: "game.io/" + name,
		Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{PeriodSeconds: 2,
			ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/check"}}}}}}
}

func tcpProbe(name string, port intstr.IntOrString) appsv1alpha1.PodContainerProbe {
	return appsv1alpha1.PodContainerProbe{Name: name, ContainerName: "main", PodConditionType: "game.io/" + name,
		Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port}}}}}
}

func httpProbe(name string, port intstr.IntOrString) appsv1alpha1.PodContainerProbe {
	return appsv1alpha1.PodContainerProbe{Name: name, ContainerName: "main", PodConditionType: "game.io/" + name,
		Probe: appsv1alpha1.ContainerProbeSpec{Probe: corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/idle", Port: port}}}}}
}

// listed is the NodePodProbe entry of probe p of marker.
func listed(marker string, p appsv1alpha1.PodContainerProbe) appsv1alpha1.ContainerProbe {
	return appsv1alpha1.ContainerProbe{Name: nodeprobe.ProbeName(marker, p.Name), ContainerName: p.ContainerName, Probe: p.Probe}
}

var alice = ejobaccess.Requester{Username: "alice", Groups: []string{"dev"}}

// requestedBy records r as the marker's requester, as the mutating webhook does.
func requestedBy(r ejobaccess.Requester) gen.PodProbeMarkerModifier {
	return gen.AddPodProbeMarkerAnnotations(map[string]string{nodeprobe.RequesterAnnotation: r.Encode()})
}

// webMarker is a marker of ns named name selecting app=web, requested by alice, with probes.
func webMarker(name string, probes ...appsv1alpha1.PodContainerProbe) *appsv1alpha1.PodProbeMarker {
	m := gen.PodProbeMarker(name, gen.SetPodProbeMarkerNamespace(ns), gen.SetPodProbeMarkerUID(types.UID(name+"-uid")),
		gen.SetPodProbeMarkerGeneration(1), gen.SetPodProbeMarkerSelector(map[string]string{"app": "web"}), requestedBy(alice))
	for _, p := range probes {
		m = gen.PodProbeMarkerFrom(m, gen.AddPodProbeMarkerProbe(p))
	}
	return m
}

func realNode(mods ...gen.NodeModifier) *corev1.Node {
	return gen.NodeFrom(gen.Node(nodeName, gen.SetNodeUID(nodeUID)), mods...)
}

// ---- fixture ----

type fixture struct {
	ctrl     *Controller
	kube     *fake.Clientset
	kruise   *kruisefake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	podIdx   cache.Indexer
	nodeIdx  cache.Indexer
	nppIdx   cache.Indexer
	ppmIdx   cache.Indexer
	// mayExec are the pods alice may exec into ("*": every one); sars counts the questions.
	mayExec map[string]bool
	sars    []string
}

type objects struct {
	nodes   []*corev1.Node
	pods    []*corev1.Pod
	markers []*appsv1alpha1.PodProbeMarker
	npps    []*appsv1alpha1.NodePodProbe
}

type option func(*Config)

func withLiveness(c *Config) { c.Liveness = true }
func webhooksOff(c *Config)  { c.WebhooksOff = true }
func noMarkers(c *Config)    { c.Markers = nil }

func newFixture(t *testing.T, o objects, opts ...option) *fixture {
	t.Helper()
	var kubeObjs, kruiseObjs []runtime.Object
	for _, n := range o.nodes {
		kubeObjs = append(kubeObjs, n.DeepCopy())
	}
	for _, p := range o.pods {
		kubeObjs = append(kubeObjs, p.DeepCopy())
	}
	for _, m := range o.markers {
		kruiseObjs = append(kruiseObjs, m.DeepCopy())
	}
	for _, n := range o.npps {
		kruiseObjs = append(kruiseObjs, n.DeepCopy())
	}
	f := &fixture{kube: fake.NewClientset(kubeObjs...), kruise: kruisefake.NewSimpleClientset(kruiseObjs...),
		clock: clocktesting.NewFakeClock(t0), recorder: record.NewFakeRecorder(50), mayExec: map[string]bool{"*": true}}
	f.kube.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		ra := sar.Spec.ResourceAttributes
		f.sars = append(f.sars, sar.Spec.User+" "+ra.Verb+" "+ra.Resource+"/"+ra.Subresource+" "+ra.Namespace+"/"+ra.Name)
		sar.Status.Allowed = sar.Spec.User == "alice" && (f.mayExec["*"] || f.mayExec[ra.Name])
		if !sar.Status.Allowed {
			sar.Status.Reason = "no RBAC rule"
		}
		return true, sar, nil
	})
	factory := informers.NewSharedInformerFactory(f.kube, 0)
	kfactory := kruiseinformers.NewSharedInformerFactory(f.kruise, 0)
	cfg := Config{
		Config:        ctrlbase.Config{Client: f.kube, KruiseClient: f.kruise, Clock: f.clock, Recorder: f.recorder},
		Pods:          factory.Core().V1().Pods(),
		Nodes:         factory.Core().V1().Nodes(),
		NodePodProbes: kfactory.Apps().V1alpha1().NodePodProbes(),
		Markers:       kfactory.Apps().V1alpha1().PodProbeMarkers(),
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	ctrl, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(ctrl.queue.ShutDown)
	f.ctrl = ctrl
	// The caches are filled by hand: no informer runs, nothing races.
	f.podIdx = cfg.Pods.Informer().GetIndexer()
	f.nodeIdx = cfg.Nodes.Informer().GetIndexer()
	f.nppIdx = cfg.NodePodProbes.Informer().GetIndexer()
	f.ppmIdx = kfactory.Apps().V1alpha1().PodProbeMarkers().Informer().GetIndexer()
	for _, n := range o.nodes {
		require.NoError(t, f.nodeIdx.Add(n))
	}
	for _, p := range o.pods {
		require.NoError(t, f.podIdx.Add(p))
	}
	for _, m := range o.markers {
		require.NoError(t, f.ppmIdx.Add(m))
	}
	for _, n := range o.npps {
		require.NoError(t, f.nppIdx.Add(n))
	}
	f.kube.ClearActions()
	f.kruise.ClearActions()
	return f
}

func (f *fixture) sync(t *testing.T, key string) time.Duration {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	after, err := f.ctrl.sync(ctx, key)
	require.NoError(t, err)
	return after
}

// writes lists the kruise client's calls other than reads, as "verb resource[/sub] name".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.kruise.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		res := a.GetResource().Resource
		if a.GetSubresource() != "" {
			res += "/" + a.GetSubresource()
		}
		name := ""
		switch x := a.(type) {
		case k8stesting.CreateAction:
			if m, ok := x.GetObject().(metav1.Object); ok {
				name = m.GetName()
			}
		case k8stesting.UpdateAction:
			if m, ok := x.GetObject().(metav1.Object); ok {
				name = m.GetName()
			}
		case k8stesting.DeleteAction:
			name = x.GetName()
		}
		out = append(out, a.GetVerb()+" "+res+" "+name)
	}
	return out
}

// npp reads nodeName's NodePodProbe from the API server; nil when there is none.
func (f *fixture) npp(t *testing.T) *appsv1alpha1.NodePodProbe {
	t.Helper()
	npp, err := f.kruise.AppsV1alpha1().NodePodProbes().Get(context.Background(), nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return npp
}

// cacheNPP puts the API server's NodePodProbe in the cache, as its watch would.
func (f *fixture) cacheNPP(t *testing.T) {
	t.Helper()
	require.NoError(t, f.nppIdx.Update(f.npp(t)))
}

// marker reads a marker from the API server.
func (f *fixture) marker(t *testing.T, name string) *appsv1alpha1.PodProbeMarker {
	t.Helper()
	m, err := f.kruise.AppsV1alpha1().PodProbeMarkers(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return m
}

// queued drains the queue and returns its keys, sorted.
func (f *fixture) queued() []string {
	var out []string
	for f.ctrl.queue.Len() > 0 {
		k, _ := f.ctrl.queue.Get()
		f.ctrl.queue.Done(k)
		f.ctrl.queue.Forget(k)
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (f *fixture) events() []string { return gen.DrainEvents(f.recorder) }
