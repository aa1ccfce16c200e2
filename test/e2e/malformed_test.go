//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

var (
	gvrCRR         = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "containerrecreaterequests"}
	gvrPullJob     = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "imagepulljobs"}
	gvrPullJobV1a1 = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "imagepulljobs"}
	gvrListJob     = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "imagelistpulljobs"}
	gvrNodeImage   = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "nodeimages"}
	gvrJob         = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

// How long kruise may take to answer an accepted object: most answers come within seconds; a CRR
// whose node has no daemon is ended after the daemon heartbeat's grace (40 s).
const (
	malAnswerWait   = time.Minute
	malNoDaemonWait = 100 * time.Second
)

// malEnv is what the rows share: clients, the test namespace, and pods that CRRs refused at
// admission can name (a CRR that really recreates gets a pod of its own).
type malEnv struct {
	f   *framework.Framework
	kc  versioned.Interface
	dyn dynamic.Interface
	ns  string
	// web runs container main; a CRR for it that is admitted recreates main.
	web string
	// unscheduled waits for a node that does not exist (no nodeName).
	unscheduled string
	// vkPending is bound to a virtual-kubelet node and stays Pending (nobody runs it).
	vkPending string
	// vkPod is Running on a virtual-kubelet node, where no kruise-daemon runs.
	vkPod, vkNode string
}

// malCase is one row of the table: a malformed write and kruise's answer to it.
type malCase struct {
	name string
	// write makes the malformed write and returns the API server's answer to it (a preparatory
	// write that fails fails the test).
	write func(ctx context.Context, t *testing.T, e *malEnv) error
	// reject lists what the API server's error must contain: the field path and the reason. Nil
	// means the write must be accepted, and then expect must come true.
	reject []string
	// expect is polled until it reports done (or returns an error: a wrong answer).
	expect  func(ctx context.Context, e *malEnv) (bool, string, error)
	timeout time.Duration
	// knownBug, when set, names a defect outside this test's reach: the row is skipped (with what
	// was observed) instead of failing while the defect lasts, and passes once it is fixed.
	knownBug string
}

// Bad input sweep: a table of malformed objects applied to the cluster. Each is either refused
// by the API server with an error naming the field and the reason, or accepted and then answered
// by kruise with a status, condition or Event that says what is wrong. None may crash a
// component (the restart counts of the kruise pods are compared at the end), hang, or be dropped
// without a word.
func TestMalformedObjects(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 8*time.Minute)
	restarts := f.KruiseRestarts(ctx, t)
	e := newMalEnv(ctx, t, f)

	t.Run("cases", func(t *testing.T) {
		for _, tc := range malCases() {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				// A context of its own: a parallel subtest may wait long for a free slot.
				tc.run(framework.Context(t, 4*time.Minute), t, e)
			})
		}
	})
	f.RequireNoRestarts(framework.Context(t, time.Minute), t, restarts)
}

func (tc malCase) run(ctx context.Context, t *testing.T, e *malEnv) {
	err := tc.write(ctx, t, e)
	if tc.reject != nil {
		if err == nil {
			t.Fatalf("accepted; want the API server to refuse it with %q", tc.reject)
		}
		for _, want := range tc.reject {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("refused with %q; want the error to contain %q", err.Error(), want)
			}
		}
		if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
			t.Errorf("refused with reason %s (%v), want Invalid or BadRequest", apierrors.ReasonForError(err), err)
		}
		return
	}
	if err != nil {
		t.Fatalf("refused by the API server (%v); want it accepted and answered by kruise", err)
	}
	timeout := tc.timeout
	if timeout == 0 {
		timeout = malAnswerWait
	}
	observed, err := framework.Poll(ctx, timeout, func(ctx context.Context) (bool, string, error) { return tc.expect(ctx, e) })
	switch {
	case err == nil:
		if tc.knownBug != "" {
			t.Logf("known bug %q no longer shows: remove the knownBug note (observed: %s)", tc.knownBug, observed)
		}
	case tc.knownBug != "":
		t.Skipf("known bug: %s (%v; observed: %s)", tc.knownBug, err, observed)
	default:
		t.Fatalf("kruise's answer: %v (last observed: %s)", err, observed)
	}
}

func newMalEnv(ctx context.Context, t *testing.T, f *framework.Framework) *malEnv {
	t.Helper()
	e := &malEnv{f: f, kc: f.KruiseClient(t), dyn: f.Dynamic(t), ns: f.NewNamespace(ctx, t, "malformed")}

	e.web = "web"
	f.RunningBusyboxPod(ctx, t, e.ns, e.web, "main")

	e.unscheduled = "unscheduled"
	pod := f.BusyboxPod(e.ns, e.unscheduled, "main")
	pod.Spec.NodeSelector = map[string]string{"kruise.e2e/no-such-node": "true"}
	e.createPod(ctx, t, pod)

	// Pods on a virtual-kubelet node (a Node object without a kubelet or a kruise-daemon): one
	// stays Pending; the test reports the other Running, as the provider would. (A pod bound to
	// a node that does not exist would be removed by the pod garbage collector at once.)
	e.vkNode = f.CreateVirtualKubeletNode(ctx, t)
	onVK := func(name string) *corev1.Pod {
		pod := f.BusyboxPod(e.ns, name, "main")
		pod.Spec.NodeName = e.vkNode
		pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		created := e.createPod(ctx, t, pod)
		f.DeletePodNow(t, e.ns, name)
		return created
	}
	e.vkPending = "pending-on-vk-node"
	onVK(e.vkPending)
	e.vkPod = "on-vk-node"
	created := onVK(e.vkPod)
	started := metav1.NewTime(time.Now().Add(-time.Second))
	created.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: &started,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "main", Image: created.Spec.Containers[0].Image, ContainerID: "vk://" + e.ns + "/main", Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		}},
	}
	if _, err := f.Client.CoreV1().Pods(e.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("reporting pod %s Running as its provider would: %v", e.vkPod, err)
	}
	return e
}

func (e *malEnv) createPod(ctx context.Context, t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	got, err := e.f.Client.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return got
}

// ownPod creates a running busybox pod named after the row, for a CRR that recreates it.
func (e *malEnv) ownPod(ctx context.Context, t *testing.T, name string, mutate ...func(*corev1.Pod)) {
	t.Helper()
	pod := e.f.BusyboxPod(e.ns, name, "main")
	for _, m := range mutate {
		m(pod)
	}
	e.f.CreateRunningPod(ctx, t, pod)
}

// ---- object builders ----

// toMap turns a typed object into the map the dynamic client sends, so a row can then put in
// what the Go type cannot hold.
func toMap(t *testing.T, obj runtime.Object) map[string]any {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatalf("converting %T: %v", obj, err)
	}
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(m, "status")
	return m
}

// set puts value at path (dot-separated) into m.
func set(path string, value any) func(map[string]any) {
	return func(m map[string]any) {
		if err := unstructured.SetNestedField(m, value, strings.Split(path, ".")...); err != nil {
			panic(fmt.Sprintf("setting %s: %v", path, err))
		}
	}
}

// setList puts a list of values (possibly empty, never null) at path.
func setList(path string, values ...any) func(map[string]any) {
	return set(path, append([]any{}, values...))
}

func malCRR(e *malEnv, name, pod string, containers ...string) *appsv1alpha1.ContainerRecreateRequest {
	crr := crrFor(e.ns, name, pod, containers...)
	crr.TypeMeta = metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ContainerRecreateRequest"}
	return crr
}

func malPullJob(e *malEnv, name, image string) *appsv1beta1.ImagePullJob {
	job := framework.NewImagePullJob(e.ns, name, image)
	job.TypeMeta = metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImagePullJob"}
	job.Spec.PullPolicy.BackoffLimit = ptr.To[int32](0)
	return job
}

func malListJob(e *malEnv, name string, images ...string) *appsv1beta1.ImageListPullJob {
	return &appsv1beta1.ImageListPullJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "ImageListPullJob"},
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
		Spec: appsv1beta1.ImageListPullJobSpec{
			Images: images,
			ImagePullJobTemplate: appsv1beta1.ImagePullJobTemplate{
				Selector:         &appsv1beta1.ImagePullJobNodeSelector{Names: []string{framework.NodeName()}},
				PullPolicy:       &appsv1beta1.PullPolicy{TimeoutSeconds: ptr.To[int32](60), BackoffLimit: ptr.To[int32](0)},
				CompletionPolicy: appsv1beta1.CompletionPolicy{Type: appsv1beta1.Always, ActiveDeadlineSeconds: ptr.To[int64](300)},
			},
		},
	}
}

// sidecarJob is a Job whose main container exits 0 after a second and whose container sc runs
// until SIGTERM, with env.
func malSidecarJob(e *malEnv, name string, env ...corev1.EnvVar) *batchv1.Job {
	img := e.f.Image("public/busybox:1.35")
	job := framework.SidecarJob(e.ns, name, corev1.RestartPolicyNever,
		framework.ShContainer("main", img, "sleep 1; exit 0"),
		framework.ShContainer("sc", img, framework.ScriptUntilTERM, env...))
	job.TypeMeta = metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}
	return job
}

// ---- writes ----

// create creates the object build returns, after the row's edits, through the dynamic client.
func create(gvr schema.GroupVersionResource, build func(e *malEnv) runtime.Object, edits ...func(map[string]any)) func(context.Context, *testing.T, *malEnv) error {
	return func(ctx context.Context, t *testing.T, e *malEnv) error {
		_, err := e.createMap(ctx, t, gvr, build(e), edits...)
		return err
	}
}

func (e *malEnv) createMap(ctx context.Context, t *testing.T, gvr schema.GroupVersionResource, obj runtime.Object, edits ...func(map[string]any)) (*unstructured.Unstructured, error) {
	t.Helper()
	m := toMap(t, obj)
	for _, edit := range edits {
		edit(m)
	}
	u := &unstructured.Unstructured{Object: m}
	return e.dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
}

// createThenUpdate creates the object (which must be accepted), waits for ready (if any) to
// hold, then applies edit to the stored object and returns the answer to the update (of the
// status subresource when status is true).
func createThenUpdate(gvr schema.GroupVersionResource, build func(e *malEnv) runtime.Object, ready func(*unstructured.Unstructured) bool,
	status bool, edit func(map[string]any)) func(context.Context, *testing.T, *malEnv) error {
	return func(ctx context.Context, t *testing.T, e *malEnv) error {
		created, err := e.createMap(ctx, t, gvr, build(e))
		if err != nil {
			t.Fatalf("creating the object to update: %v", err)
		}
		client := e.dyn.Resource(gvr).Namespace(created.GetNamespace())
		cur := created
		if ready != nil {
			framework.WaitFor(ctx, t, malAnswerWait, "the object to update to be ready", func(ctx context.Context) (bool, string, error) {
				got, err := client.Get(ctx, created.GetName(), metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				cur = got
				return ready(got), fmt.Sprintf("%v", got.Object["status"]), nil
			})
		}
		edit(cur.Object)
		if status {
			_, err = client.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		} else {
			_, err = client.Update(ctx, cur, metav1.UpdateOptions{})
		}
		return err
	}
}

// editNodeImage adds image repo with tags to the real node's NodeImage, as a user editing it
// would (a JSON merge patch), and removes the image again when the test ends.
func editNodeImage(repo string, tags ...map[string]any) func(context.Context, *testing.T, *malEnv) error {
	return func(ctx context.Context, t *testing.T, e *malEnv) error {
		node := framework.NodeName()
		client := e.dyn.Resource(gvrNodeImage)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			body := fmt.Sprintf(`{"spec":{"images":{%q:null}}}`, repo)
			if _, err := client.Patch(ctx, node, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("removing %s from NodeImage %s: %v", repo, node, err)
			}
		})
		list := make([]any, 0, len(tags))
		for _, tag := range tags {
			list = append(list, tag)
		}
		patch := map[string]any{"spec": map[string]any{"images": map[string]any{repo: map[string]any{"tags": list}}}}
		body, err := json.Marshal(patch)
		if err != nil {
			t.Fatalf("encoding the patch: %v", err)
		}
		_, err = client.Patch(ctx, node, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	}
}
