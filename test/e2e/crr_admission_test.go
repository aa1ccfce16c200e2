//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// exampleObjects decodes a multi-document manifest of docs/examples into typed objects.
func exampleObjects(t *testing.T, file string) []runtime.Object {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := appsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	decode := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var out []runtime.Object
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("decoding %s: %v", file, err)
		}
		out = append(out, obj)
	}
}

// The pod and its CRR in one file, created back to back as kubectl apply does
// (docs/examples/crr.yaml): the CRR waits for the pod to start (Admitted False,
// WaitingForPod), then recreates the container.
func TestCRRExampleWaitsForItsPod(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-example")

	var pod *corev1.Pod
	var crr *appsv1alpha1.ContainerRecreateRequest
	for _, obj := range exampleObjects(t, "../../docs/examples/crr.yaml") {
		switch o := obj.(type) {
		case *corev1.Pod:
			pod = o
		case *appsv1alpha1.ContainerRecreateRequest:
			crr = o
		}
	}
	if pod == nil || crr == nil {
		t.Fatal("docs/examples/crr.yaml lacks the pod or the CRR")
	}
	pod.Namespace, crr.Namespace = ns, ns
	// The example's CRR waits only if a leading controller sees it before
	// its pod runs: right after a (re)deploy no replica may lead yet. A CRR
	// for a pod that never starts, answered (waiting), shows one leads with
	// its caches synced.
	pendingPod(ctx, t, f, ns, "probe-pod")
	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crrFor(ns, "probe", "probe-pod", "main"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the probe CRR: %v", err)
	}
	framework.WaitCRR(ctx, t, kc, ns, "probe", 2*time.Minute, "a controller answered the probe CRR", func(c *appsv1alpha1.ContainerRecreateRequest) bool {
		return appsv1alpha1.AdmittedCondition(c) != nil
	})
	if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRR: %v", err)
	}
	got := framework.WaitCRR(ctx, t, kc, ns, crr.Name, 2*time.Minute, "the example CRR completed", completed)
	if got.Status.Message != "recreated 1 container" {
		t.Fatalf("message %q, want %q; pod: %s", got.Status.Message, "recreated 1 container", f.DescribePods(ctx, ns, ""))
	}
	if !appsv1alpha1.IsAdmitted(got) {
		t.Errorf("completed without the Admitted condition: %+v", got.Status.Conditions)
	}
	live, err := f.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting pod: %v", err)
	}
	for _, st := range live.Status.ContainerStatuses {
		if st.Name == "app" && st.RestartCount != 1 {
			t.Errorf("container app restartCount %d, want 1", st.RestartCount)
		}
	}
	// It was created before its pod ran: it waited, and said so.
	events, err := f.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + crr.Name})
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	var reasons []string
	for _, e := range events.Items {
		reasons = append(reasons, e.Reason)
	}
	if !strings.Contains(strings.Join(reasons, ","), "WaitingForPod") {
		t.Errorf("no WaitingForPod Event on the CRR; reasons %v", reasons)
	}
}

// A CRR copied from an admitted one (kubectl get -o yaml, renamed) carries its
// statusContext, preStop and routing labels: the CRR mutating webhook refuses it.
func TestCRRCopyOfAnAdmittedOneIsRefused(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-copy")
	pod := f.BusyboxPod(ns, "web", "main")
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	f.CreateRunningPod(ctx, t, pod)
	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crrFor(ns, "orig", "web", "main"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRR: %v", err)
	}
	orig := framework.WaitCRR(ctx, t, kc, ns, "orig", time.Minute, "the original completed", completed)
	cp := &appsv1alpha1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: ns, Labels: orig.Labels},
		Spec:       orig.Spec,
	}
	_, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, cp, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "mcontainerrecreaterequest.kb.io") || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("creating a copy of an admitted CRR: %v, want it refused by the CRR mutating webhook", err)
	}
	// Nor may its creator write them into a request of theirs afterwards
	// (one that waits for its pod, so kruise-controller fills in nothing).
	pendingPod(ctx, t, f, ns, "pending")
	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crrFor(ns, "late", "pending", "main"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRR: %v", err)
	}
	patch := fmt.Sprintf(`[{"op":"add","path":"/spec/containers/0/statusContext","value":{"containerID":%q,"restartCount":0}}]`,
		orig.Spec.Containers[0].StatusContext.ContainerID)
	_, err = kc.AppsV1alpha1().ContainerRecreateRequests(ns).Patch(ctx, "late", types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "written by kruise-controller only") {
		t.Fatalf("adding a statusContext later: %v, want it refused by kruise-crr-read-only-fields", err)
	}
}

// The controller admits a CRR for a running pod: routing labels and, per container, the
// instance to replace.
func TestCRRAdmissionFillsLabelsAndContext(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-admit")
	pod := f.RunningBusyboxPod(ctx, t, ns, "web", "main", "sidecar")

	// The create response itself carries them: the CRR mutating webhook fills the request in, as
	// OpenKruise's does; nothing is waited for.
	crr, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crrFor(ns, "r", "web", "sidecar"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CRR: %v", err)
	}
	if s := crr.Spec.Strategy; s == nil || s.FailurePolicy != appsv1alpha1.ContainerRecreateRequestFailurePolicyFail {
		t.Errorf("strategy = %+v, want failurePolicy Fail", s)
	}
	want := map[string]string{
		appsv1alpha1.ContainerRecreateRequestPodUIDKey:   string(pod.UID),
		appsv1alpha1.ContainerRecreateRequestNodeNameKey: pod.Spec.NodeName,
		appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	}
	for k, v := range want {
		if crr.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, crr.Labels[k], v)
		}
	}
	var wantID string
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == "sidecar" {
			wantID = st.ContainerID
		}
	}
	sc := crr.Spec.Containers[0].StatusContext
	if sc == nil || sc.ContainerID != wantID || wantID == "" {
		t.Errorf("statusContext = %+v, want containerID %q", sc, wantID)
	}
	// kruise-controller admits it, keeping the webhook's values.
	admitted := framework.WaitCRR(ctx, t, kc, ns, "r", 30*time.Second, "CRR admitted", appsv1alpha1.IsAdmitted)
	if completed(admitted) {
		t.Errorf("admitted CRR is Completed: %q", admitted.Status.Message)
	}
	if got := admitted.Spec.Containers[0].StatusContext; got == nil || *got != *sc {
		t.Errorf("statusContext after admission = %+v, want the webhook's %+v", got, sc)
	}
}

// A CRR that cannot be carried out is refused at create by the validating webhook
// (vcontainerrecreaterequest.kb.io), with a message that says why, in the words kruise-controller
// uses in status when it finds the same later: a pod deleted after its CRR was admitted.
func TestCRRRejectsBadInput(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "crr-reject")
	f.RunningBusyboxPod(ctx, t, ns, "web", "main")

	// A pod being deleted: its finalizer holds it in Terminating until the test removes it.
	ending := f.BusyboxPod(ns, "ending", "main")
	ending.Finalizers = []string{"kruise.io/e2e-hold"}
	ending.Spec.NodeSelector = map[string]string{"kruise.e2e/no-such-node": "true"}
	if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, ending, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod ending: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := f.Client.CoreV1().Pods(ns).Patch(ctx, "ending", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("removing the finalizer of pod ending: %v", err)
		}
	})
	if err := f.Client.CoreV1().Pods(ns).Delete(ctx, "ending", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod ending: %v", err)
	}

	for _, tc := range []struct {
		crr  *appsv1alpha1.ContainerRecreateRequest
		want []string
	}{
		{crrFor(ns, "missing-pod", "nope", "main"), []string{`ContainerRecreateRequest.apps.kruise.io "missing-pod" is invalid`,
			`spec.podName: Invalid value: "nope": pod "nope" not found in namespace "` + ns + `"`}},
		{crrFor(ns, "unknown-container", "web", "main", "ghost"), []string{
			`spec.containers[1].name: Invalid value: "ghost": container "ghost" not found in pod "web"`}},
		{crrFor(ns, "terminating-pod", "ending", "main"), []string{`spec.podName: Invalid value: "ending": pod "ending" is being deleted`}},
	} {
		_, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, tc.crr, metav1.CreateOptions{})
		requireWebhookRefusal(t, err, "vcontainerrecreaterequest.kb.io", tc.want...)
	}
	// Through v1beta1 as well.
	_, err := kc.AppsV1beta1().ContainerRecreateRequests(ns).Create(ctx, &appsv1beta1.ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "v1beta1-missing-pod", Namespace: ns},
		Spec:       appsv1beta1.ContainerRecreateRequestSpec{PodName: "nope", Containers: []appsv1beta1.ContainerRecreateRequestContainer{{Name: "main"}}},
	}, metav1.CreateOptions{})
	requireWebhookRefusal(t, err, "vcontainerrecreaterequest.kb.io", `pod "nope" not found`)

	// What changes after admission is answered in status: a pod deleted once its CRR was admitted.
	pendingPod(ctx, t, f, ns, "short-lived")
	if _, err := kc.AppsV1alpha1().ContainerRecreateRequests(ns).Create(ctx, crrFor(ns, "pod-deleted", "short-lived", "main"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRR pod-deleted: %v", err)
	}
	if err := f.Client.CoreV1().Pods(ns).Delete(ctx, "short-lived", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("deleting pod short-lived: %v", err)
	}
	got := framework.WaitCRR(ctx, t, kc, ns, "pod-deleted", 30*time.Second, "CRR pod-deleted completed", completed)
	// Gone before or after kruise-controller first looked at the request, or seen in between: a
	// deletion with grace period 0 first writes the deletion timestamp, then removes the pod.
	switch msg := got.Status.Message; msg {
	case `pod "short-lived" not found`, "pod has gone", `pod "short-lived" is being deleted`:
	default:
		t.Errorf("message %q, want %q, %q or %q", msg, `pod "short-lived" not found`, "pod has gone", `pod "short-lived" is being deleted`)
	}
	if _, routed := got.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey]; routed {
		t.Errorf("a CRR whose pod is gone carries the active label")
	}
	for _, st := range got.Status.ContainerRecreateStates {
		if st.Phase != appsv1alpha1.ContainerRecreateRequestFailed {
			t.Errorf("container %s is %s, want Failed", st.Name, st.Phase)
		}
	}
}
