package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const ns = "prod"

// harness is the rollout command against fake clientsets.
type harness struct {
	kube   *kubefake.Clientset
	kruise *kruisefake.Clientset
	// rollouts holds kruise-rollout's Rollouts; nil: its CRD is not installed.
	rollouts *dynamicfake.FakeDynamicClient
	// rolloutVersion is the Rollouts' version the cluster serves.
	rolloutVersion string
	out, err       *bytes.Buffer
	terminal       bool
	// writes, when set, receives a copy of every write to the output.
	writes chan string
}

// write is the harness's output: the buffer, and writes if set.
type write struct{ h *harness }

func (w write) Write(p []byte) (int, error) {
	if w.h.writes != nil {
		w.h.writes <- string(p)
	}
	return w.h.out.Write(p)
}

func newHarness(kubeObjects []runtime.Object, kruiseObjects []runtime.Object) *harness {
	return &harness{
		kube:   kubefake.NewClientset(kubeObjects...),
		kruise: kruisefake.NewSimpleClientset(kruiseObjects...),
		out:    &bytes.Buffer{},
		err:    &bytes.Buffer{},
	}
}

func (h *harness) deps() *deps {
	return &deps{
		streams: genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: write{h}, ErrOut: h.err},
		clients: func() (*clients, error) {
			return &clients{kube: h.kube, kruise: h.kruise, rollouts: func() (dynamic.NamespaceableResourceInterface, error) {
				if h.rollouts == nil {
					return nil, errNoRolloutCRD
				}
				return h.rollouts.Resource(rolloutsGVR.GroupResource().WithVersion(h.rolloutVersion)), nil
			}}, nil
		},
		namespace:  func() (string, error) { return ns, nil },
		isTerminal: func(io.Writer) bool { return h.terminal },
		now:        func() time.Time { return time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) },
	}
}

// run runs `rollout args...` and returns its output and error.
func (h *harness) run(ctx context.Context, args ...string) (string, error) {
	cmd := newCmdRollout(h.deps())
	cmd.SetArgs(args)
	cmd.SetOut(h.out)
	cmd.SetErr(h.err)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(ctx)
	return h.out.String(), err
}

// patchBodies are the patch actions' types and bodies, in order.
func patchBodies(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		if p, ok := a.(k8stesting.PatchAction); ok {
			out = append(out, string(p.GetPatchType())+" "+string(p.GetPatch()))
		}
	}
	return out
}

func jsonMarshal(v any) (string, error) {
	raw, err := json.Marshal(v)
	return string(raw), err
}

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

var selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}

// cloneSet is CloneSet web: 4 replicas at generation 2, changed by mods.
func newCloneSet(mods ...func(*appsv1alpha1.CloneSet)) *appsv1alpha1.CloneSet {
	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "cs-uid", Generation: 2, ResourceVersion: "7"},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](4), Selector: selector, Template: template("busybox:2"),
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
		},
		Status: appsv1alpha1.CloneSetStatus{
			ObservedGeneration: 2, Replicas: 4, ReadyReplicas: 4, AvailableReplicas: 4,
			UpdatedReplicas: 4, UpdatedReadyReplicas: 4, UpdatedAvailableReplicas: 4,
			UpdateRevision: "web-v2", CurrentRevision: "web-v2",
		},
	}
	for _, m := range mods {
		m(cs)
	}
	return cs
}

func withUpdated(updated, ready int32) func(*appsv1alpha1.CloneSet) {
	return func(cs *appsv1alpha1.CloneSet) {
		cs.Status.UpdatedReplicas, cs.Status.UpdatedReadyReplicas, cs.Status.UpdatedAvailableReplicas = updated, ready, ready
	}
}

func withPartition(n int) func(*appsv1alpha1.CloneSet) {
	return func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt(n)) }
}

func newAdvancedStatefulSet(updated, ready, partition int32, paused bool) *appsv1beta1.StatefulSet {
	return &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, UID: "asts-uid", Generation: 3, ResourceVersion: "9"},
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), Selector: selector, Template: template("busybox:2"),
			UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(partition), Paused: paused},
			},
		},
		Status: appsv1beta1.StatefulSetStatus{
			ObservedGeneration: 3, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
			UpdatedReplicas: updated, UpdatedReadyReplicas: ready, UpdatedAvailableReplicas: ready, UpdateRevision: "db-v3",
		},
	}
}

func newAdvancedDaemonSet(updated, available int32) *appsv1alpha1.DaemonSet {
	return &appsv1alpha1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns, UID: "ads-uid", Generation: 1, ResourceVersion: "5"},
		Spec:       appsv1alpha1.DaemonSetSpec{Selector: selector, Template: template("busybox:2")},
		Status: appsv1alpha1.DaemonSetStatus{
			ObservedGeneration: 1, DesiredNumberScheduled: 2, CurrentNumberScheduled: 2, NumberReady: available,
			NumberAvailable: available, UpdatedNumberScheduled: updated, DaemonSetHash: "agent-v1",
		},
	}
}

// pod is a pod of the workload with uid at revision, ready or not.
func pod(name string, owner types.UID, rev string, ready bool, mods ...gen.PodModifier) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	base := []gen.PodModifier{
		gen.SetPodNamespace(ns),
		gen.AddPodLabels(map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: rev}),
		gen.SetPodOwnerReferences(metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: owner, Controller: ptr.To(true)}),
		gen.SetPodCondition(corev1.PodCondition{Type: corev1.PodReady, Status: status}),
	}
	return gen.Pod(name, append(base, mods...)...)
}

// inPlaceState is the annotation of a pod in batch 1 of an in-place update
// of main, with sidecar to come.
func inPlaceState(t *testing.T) gen.PodModifier {
	state := pub.InPlaceUpdateState{
		Revision:               "web-v2",
		ContainerBatchesRecord: []pub.InPlaceUpdateContainerBatch{{Containers: []string{"main"}}},
		NextContainerImages:    map[string]string{"sidecar": "sidecar:2"},
	}
	raw, err := jsonMarshal(state)
	if err != nil {
		t.Fatal(err)
	}
	return gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateStateKey: raw})
}

// controllerRevision is revision number of the workload with uid,
// recording a template with image.
func controllerRevision(t *testing.T, name string, owner types.UID, number int64, image string) *appsv1.ControllerRevision {
	tmpl := template(image)
	data, err := revision.PatchData(&tmpl, "spec", "template")
	if err != nil {
		t.Fatal(err)
	}
	return gen.ControllerRevision(name,
		gen.SetControllerRevisionNamespace(ns),
		gen.AddControllerRevisionLabels(map[string]string{"app": "web"}),
		gen.SetControllerRevisionOwnerReferences(metav1.OwnerReference{Name: "owner", UID: owner, Controller: ptr.To(true)}),
		gen.SetControllerRevisionNumber(number),
		gen.SetControllerRevisionData(data),
	)
}
