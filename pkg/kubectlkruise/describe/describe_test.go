package describe

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/test/unit/golden"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func event(kind, name string, uid types.UID, typ, reason, message string, count int32, first, last time.Duration) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name + "." + reason + "." + string(uid) + "." + kind, Namespace: "ns"},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name, Namespace: "ns", UID: uid},
		Type:           typ, Reason: reason, Message: message, Count: count,
		Source:         corev1.EventSource{Component: "kruise-controller"},
		FirstTimestamp: ago(first), LastTimestamp: ago(last),
	}
}

func run(t *testing.T, kube, kruise []runtime.Object, args ...string) (string, error) {
	t.Helper()
	out := &bytes.Buffer{}
	o := &Options{
		IOStreams: genericiooptions.IOStreams{Out: out, ErrOut: out},
		Namespace: "ns",
		Kube:      kubefake.NewSimpleClientset(kube...),
		Kruise:    kruisefake.NewSimpleClientset(kruise...),
		now:       func() time.Time { return now },
	}
	kind, name, err := parseTarget(args)
	if err != nil {
		return "", err
	}
	err = o.Run(context.Background(), kind, name)
	return out.String(), err
}

func TestDescribeCRR(t *testing.T) {
	crr := &appsv1beta1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0-x7k2p", Namespace: "ns", UID: "crr-uid", CreationTimestamp: ago(5 * time.Minute),
			Labels: map[string]string{"crr.apps.kruise.io/node-name": "node-a", "crr.apps.kruise.io/pod-uid": "pod-uid"}},
		Spec: appsv1beta1.ContainerRecreateRequestSpec{
			PodName: "web-0",
			Containers: []appsv1beta1.ContainerRecreateRequestContainer{
				{Name: "sidecar", StatusContext: &appsv1beta1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://a", RestartCount: 2}},
				{Name: "app", StatusContext: &appsv1beta1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://b"}},
			},
			Strategy:              &appsv1beta1.ContainerRecreateRequestStrategy{OrderedRecreate: true, UnreadyGracePeriodSeconds: ptr.To[int64](5)},
			ActiveDeadlineSeconds: ptr.To[int64](60),
		},
		Status: appsv1beta1.ContainerRecreateRequestStatus{
			Phase:          appsv1beta1.ContainerRecreateRequestCompleted,
			CompletionTime: ptr.To(ago(4 * time.Minute)),
			Message:        "recreating sidecar failed",
			ContainerRecreateStates: []appsv1beta1.ContainerRecreateRequestContainerRecreateState{
				{Name: "sidecar", Phase: appsv1beta1.ContainerRecreateRequestFailed, Message: "preStop hook failed: exit code 1", IsKilled: false},
				{Name: "app", Phase: appsv1beta1.ContainerRecreateRequestFailed, Message: "an earlier container failed"},
			},
			Conditions: []metav1.Condition{{Type: "Admitted", Status: metav1.ConditionTrue, Reason: "PodRunning", Message: "pod pod-uid on node-a", LastTransitionTime: ago(5 * time.Minute)}},
		},
	}
	events := []runtime.Object{
		event("ContainerRecreateRequest", "web-0-x7k2p", "crr-uid", "Warning", "RecreateFailed", "container sidecar: preStop hook failed", 1, 4*time.Minute, 4*time.Minute),
		event("ContainerRecreateRequest", "web-0-x7k2p", "crr-uid", "Normal", "Admitted", "routed to node-a", 2, 5*time.Minute, 290*time.Second),
		event("ContainerRecreateRequest", "web-0-x7k2p", "old-uid", "Normal", "Admitted", "an earlier request of the same name", 1, time.Hour, time.Hour),
		event("Pod", "web-0-x7k2p", "", "Normal", "Other", "another kind", 1, time.Minute, time.Minute),
	}
	got, err := run(t, events, []runtime.Object{crr}, "crr/web-0-x7k2p")
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "crr", got)
}

func TestDescribeImagePullJob(t *testing.T) {
	job := &appsv1beta1.ImagePullJob{
		ObjectMeta: metav1.ObjectMeta{Name: "pull-app", Namespace: "ns", UID: "job-uid", CreationTimestamp: ago(10 * time.Minute)},
		Spec: appsv1beta1.ImagePullJobSpec{Image: "registry.example.com/app:v2", ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
			Selector:    &appsv1beta1.ImagePullJobNodeSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "web"}}},
			PullSecrets: []string{"regcred"}, Parallelism: ptr.To(intstr.FromInt32(2)),
		}},
		Status: appsv1beta1.ImagePullJobStatus{
			StartTime: ptr.To(ago(10 * time.Minute)), Desired: 4, Active: 1, Succeeded: 1, Failed: 2,
			FailedNodes: []string{"node-b", "node-c"},
			Failures:    []appsv1beta1.NodeFailure{{Node: "node-b", Reason: "NotFound", Message: "manifest unknown"}},
		},
	}
	tagged := func(node string, phase appsv1beta1.ImagePullPhase, message string) *appsv1beta1.NodeImage {
		ni := &appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: node}}
		ni.Spec.Images = map[string]appsv1beta1.ImageSpec{"registry.example.com/app": {Tags: []appsv1beta1.ImageTagSpec{{
			Tag: "v2", Version: 1, OwnerReferences: []corev1.ObjectReference{{Kind: "ImagePullJob", UID: "job-uid"}},
		}}}}
		if phase != "" {
			ni.Status.ImageStatuses = map[string]appsv1beta1.ImageStatus{"registry.example.com/app": {Tags: []appsv1beta1.ImageTagStatus{{Tag: "v2", Version: 1, Phase: phase, Message: message}}}}
		}
		return ni
	}
	kruise := []runtime.Object{job,
		tagged("node-a", appsv1beta1.ImagePhaseSucceeded, ""),
		tagged("node-b", appsv1beta1.ImagePhaseFailed, "manifest unknown"),
		tagged("node-c", appsv1beta1.ImagePhaseFailed, "pull access denied: 401 Unauthorized"),
		tagged("node-d", "", ""),
		&appsv1beta1.NodeImage{ObjectMeta: metav1.ObjectMeta{Name: "node-e"}},
	}
	events := []runtime.Object{event("ImagePullJob", "pull-app", "job-uid", "Warning", "PullFailed", "node-b: manifest unknown", 1, 8*time.Minute, 8*time.Minute)}
	got, err := run(t, events, kruise, "imagepulljob", "pull-app")
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "imagepulljob", got)
}

// workloadObjects are two revisions and three pods of the workload uid
// selected by app=web, plus a pod and a revision of another owner.
func workloadObjects(uid types.UID, revisionLabel func(rev string) string) []runtime.Object {
	owner := []metav1.OwnerReference{{Kind: "CloneSet", Name: "web", UID: uid, Controller: ptr.To(true)}}
	other := []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-1", UID: "rs-uid", Controller: ptr.To(true)}}
	revision := func(name string, number int64, age time.Duration, refs []metav1.OwnerReference) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}, OwnerReferences: refs, CreationTimestamp: ago(age)}, Revision: number}
	}
	pod := func(name, rev, lifecycle string, ready bool, refs []metav1.OwnerReference, annotations map[string]string, conditions ...corev1.PodCondition) *corev1.Pod {
		labels := map[string]string{"app": "web", "controller-revision-hash": revisionLabel(rev)}
		if lifecycle != "" {
			labels[pub.LifecycleStateKey] = lifecycle
		}
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels, Annotations: annotations, OwnerReferences: refs},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}, {Name: "sidecar"}}},
			Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: ready}, {Name: "sidecar", Ready: true}}, Conditions: conditions},
		}
	}
	inPlace := map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"web-7c9f","updateTimestamp":"2026-03-01T11:59:30Z","lastContainerStatuses":{},"nextContainerImages":{"app":"app:v2"},"containerBatchesRecord":[{"timestamp":"2026-03-01T11:59:30Z","containers":["sidecar"]}]}`}
	return []runtime.Object{
		revision("web-5b6d", 1, time.Hour, owner),
		revision("web-7c9f", 2, time.Minute, owner),
		revision("web-other", 9, time.Minute, other),
		pod("web-aaaaa", "web-7c9f", "Normal", true, owner, nil),
		pod("web-bbbbb", "web-5b6d", "Updating", false, owner, inPlace, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse}),
		pod("web-ccccc", "web-5b6d", "PreparingUpdate", true, owner, nil),
		pod("web-1-zzzzz", "web-other", "", true, other, nil),
	}
}

func TestDescribeWorkloads(t *testing.T) {
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	meta := func(uid types.UID) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: uid, CreationTimestamp: ago(time.Hour), Labels: map[string]string{"app": "web"}}
	}
	cloneSet := &appsv1beta1.CloneSet{ObjectMeta: meta("cs-uid"), Spec: appsv1beta1.CloneSetSpec{
		Replicas: ptr.To[int32](3), Selector: selector,
		UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
			PodUpdatePolicy: "InPlaceIfPossible", Partition: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromString("50%")),
		}},
	}, Status: appsv1beta1.CloneSetStatus{Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReadyReplicas: 1, CurrentRevision: "web-5b6d", UpdateRevision: "web-7c9f"}}
	statefulSet := &appsv1beta1.StatefulSet{ObjectMeta: meta("cs-uid"), Spec: appsv1beta1.StatefulSetSpec{
		Replicas: ptr.To[int32](3), Selector: selector,
		UpdateStrategy: appsv1beta1.StatefulSetUpdateStrategy{RollingUpdate: &appsv1beta1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}},
	}, Status: appsv1beta1.StatefulSetStatus{Replicas: 3, CurrentReplicas: 2, UpdatedReplicas: 1, CurrentRevision: "web-5b6d", UpdateRevision: "web-7c9f"}}
	daemonSet := &appsv1beta1.DaemonSet{ObjectMeta: meta("cs-uid"), Spec: appsv1beta1.DaemonSetSpec{Selector: selector},
		Status: appsv1beta1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 1, NumberReady: 2, UpdateRevision: "7c9f"}}
	cases := []struct {
		name     string
		args     []string
		object   runtime.Object
		revLabel func(string) string
	}{
		{name: "cloneset", args: []string{"clone/web"}, object: cloneSet, revLabel: func(r string) string { return r }},
		{name: "statefulset", args: []string{"asts/web"}, object: statefulSet, revLabel: func(r string) string { return r }},
		{name: "daemonset", args: []string{"ads", "web"}, object: daemonSet, revLabel: func(r string) string { return strings.TrimPrefix(r, "web-") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kube := append(workloadObjects("cs-uid", tc.revLabel),
				event(strings.TrimSuffix(reflectKind(tc.object), ""), "web", "cs-uid", "Normal", "SuccessfulCreate", "created pod web-aaaaa", 1, 2*time.Minute, 2*time.Minute))
			got, err := run(t, kube, []runtime.Object{tc.object}, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, tc.name, got)
		})
	}
}

func reflectKind(obj runtime.Object) string {
	switch obj.(type) {
	case *appsv1beta1.CloneSet:
		return "CloneSet"
	case *appsv1beta1.StatefulSet:
		return "StatefulSet"
	}
	return "DaemonSet"
}

func TestDescribeErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{args: []string{"deployment/web"}, want: `cannot describe "deployment"`},
		{args: []string{"web"}, want: "give the object as KIND/NAME"},
		{args: []string{"crr/"}, want: "give the name of the crr"},
		{args: []string{"crr/gone"}, want: "containerrecreaterequest ns/gone not found: list them with `kubectl get crr -n ns`"},
		{args: []string{"imagepulljob/gone"}, want: "imagepulljob ns/gone not found"},
		{args: []string{"cloneset.apps.kruise.io/gone"}, want: "cloneset ns/gone not found"},
		{args: []string{"bcj/gone"}, want: "broadcastjob ns/gone not found: list them with `kubectl get bcj -n ns`"},
		{args: []string{"advancedcronjobs/gone"}, want: "advancedcronjob ns/gone not found: list them with `kubectl get acj -n ns`"},
		{args: []string{"ephemeraljob", "gone"}, want: "ephemeraljob ns/gone not found: list them with `kubectl get ejob -n ns`"},
	}
	for _, tc := range cases {
		if _, err := run(t, nil, nil, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("describe %v: error = %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

func TestNamesOf(t *testing.T) {
	kruise := kruisefake.NewSimpleClientset(
		&appsv1beta1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}},
		&appsv1beta1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "elsewhere"}},
		&appsv1beta1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: "web-0-x", Namespace: "ns"}},
		&appsv1beta1.BroadcastJob{ObjectMeta: metav1.ObjectMeta{Name: "clean", Namespace: "ns"}},
		&appsv1beta1.AdvancedCronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns"}},
		&appsv1alpha1.EphemeralJob{ObjectMeta: metav1.ObjectMeta{Name: "debug", Namespace: "ns"}},
	)
	for kind, want := range map[string]string{"clone": "web", "crr": "web-0-x", "asts": "", "imagepulljob": "", "bcj": "clean", "advancedcronjob": "nightly", "ejob": "debug"} {
		names, err := namesOf(context.Background(), kruise, "ns", kind)
		if err != nil || strings.Join(names, ",") != want {
			t.Errorf("namesOf(%s) = %v, %v; want %q", kind, names, err, want)
		}
	}
}
