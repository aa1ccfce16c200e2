package validate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func crr(pod string, containers ...string) *appsv1beta1.ContainerRecreateRequest {
	c := &appsv1beta1.ContainerRecreateRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "ContainerRecreateRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns},
		Spec:       appsv1beta1.ContainerRecreateRequestSpec{PodName: pod},
	}
	for _, n := range containers {
		c.Spec.Containers = append(c.Spec.Containers, appsv1beta1.ContainerRecreateRequestContainer{Name: n})
	}
	return c
}

func crrRequest(t *testing.T, obj runtime.Object, version ...string) *admissionv1.AdmissionRequest {
	return request(t, "containerrecreaterequests", "ContainerRecreateRequest", obj, version...)
}

func webPod(mods ...gen.PodModifier) *corev1.Pod {
	base := []gen.PodModifier{gen.SetPodNamespace(ns), gen.SetPodContainers(corev1.Container{Name: "main"}, corev1.Container{Name: "sidecar"}),
		gen.SetPodPhase(corev1.PodRunning), gen.SetPodNodeName("node-a")}
	return gen.Pod("web", append(base, mods...)...)
}

func TestCRRWebhook(t *testing.T) {
	deleted := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		pods []runtime.Object
		req  func(t *testing.T) *admissionv1.AdmissionRequest
		// reason and message are the refusal's; "" reason: admitted.
		reason  string
		message []string
	}{
		{
			name: "running pod, known containers", pods: []runtime.Object{webPod()},
			req: func(t *testing.T) *admissionv1.AdmissionRequest { return crrRequest(t, crr("web", "main", "sidecar")) },
		},
		{
			// kubectl apply of a pod and its request: the request waits.
			name: "pod not scheduled yet", pods: []runtime.Object{webPod(gen.SetPodNodeName(""), gen.SetPodPhase(corev1.PodPending))},
			req: func(t *testing.T) *admissionv1.AdmissionRequest { return crrRequest(t, crr("web", "main")) },
		},
		{
			name:   "pod missing",
			req:    func(t *testing.T) *admissionv1.AdmissionRequest { return crrRequest(t, crr("nope", "main")) },
			reason: ReasonPodNotFound,
			message: []string{`ContainerRecreateRequest.apps.kruise.io "r" is invalid: spec.podName: Invalid value: "nope": ` +
				`pod "nope" not found in namespace "team"`},
		},
		{
			name: "pod of the same name in another namespace", pods: []runtime.Object{webPod(gen.SetPodNamespace("other"))},
			req:    func(t *testing.T) *admissionv1.AdmissionRequest { return crrRequest(t, crr("web", "main")) },
			reason: ReasonPodNotFound, message: []string{`pod "web" not found in namespace "team"`},
		},
		{
			name: "pod being deleted", pods: []runtime.Object{webPod(gen.SetPodDeletionTimestamp(deleted))},
			req:    func(t *testing.T) *admissionv1.AdmissionRequest { return crrRequest(t, crr("web", "main")) },
			reason: ReasonPodTerminating, message: []string{`spec.podName: Invalid value: "web": pod "web" is being deleted`},
		},
		{
			name: "pod finished", pods: []runtime.Object{webPod(gen.SetPodPhase(corev1.PodSucceeded))},
			req:     func(t *testing.T) *admissionv1.AdmissionRequest { return crrRequest(t, crr("web", "main")) },
			reason:  ReasonPodFinished,
			message: []string{`spec.podName: Invalid value: "web": pod "web" has finished (phase "Succeeded"): its containers will not run again`},
		},
		{
			name: "unknown containers, each named at its index", pods: []runtime.Object{webPod()},
			req: func(t *testing.T) *admissionv1.AdmissionRequest {
				return crrRequest(t, crr("web", "ghost", "main", "phantom"))
			},
			reason: ReasonContainerNotFound,
			message: []string{
				`spec.containers[0].name: Invalid value: "ghost": container "ghost" not found in pod "web"`,
				`spec.containers[2].name: Invalid value: "phantom": container "phantom" not found in pod "web"`,
			},
		},
		{
			// As kruise-controller answers: only spec.containers can be
			// recreated.
			name:   "native sidecar",
			pods:   []runtime.Object{webPod(gen.AddPodInitContainer(corev1.Container{Name: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}))},
			req:    func(t *testing.T) *admissionv1.AdmissionRequest { return crrRequest(t, crr("web", "proxy")) },
			reason: ReasonContainerNotFound,
			message: []string{`spec.containers[0].name: Invalid value: "proxy": container "proxy" not found in pod "web": ` +
				`it is a native sidecar (an init container with restartPolicy Always), and only spec.containers can be recreated`},
		},
		{
			name: "generateName names the request", pods: []runtime.Object{},
			req: func(t *testing.T) *admissionv1.AdmissionRequest {
				c := crr("nope", "main")
				c.Name, c.GenerateName = "", "restart-"
				return crrRequest(t, c)
			},
			reason: ReasonPodNotFound, message: []string{`ContainerRecreateRequest.apps.kruise.io "restart-" is invalid`},
		},
		{
			name: "v1alpha1 request",
			req: func(t *testing.T) *admissionv1.AdmissionRequest {
				return crrRequest(t, gen.CRR("r", gen.SetCRRNamespace(ns), gen.SetCRRPodName("nope"), gen.SetCRRContainers("main")), "v1alpha1")
			},
			reason: ReasonPodNotFound, message: []string{`pod "nope" not found`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, CRRWebhook(fake.NewClientset(tc.pods...).CoreV1()))
			resp := s.send(t, tc.req(t))
			if tc.reason == "" {
				assert.True(t, resp.Allowed, "%+v", resp.Result)
				assert.Empty(t, resp.Warnings)
				return
			}
			denied(t, resp, tc.message...)
			assert.EqualValues(t, 1, s.rejections(t, tc.reason))
		})
	}
}

// The webhook never refuses for its own failure: a read that fails for any
// reason but NotFound admits the request with a warning.
func TestCRRWebhookAdmitsWhenThePodCannotBeRead(t *testing.T) {
	for name, err := range map[string]error{
		"forbidden":   apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web", errors.New("RBAC")),
		"unavailable": apierrors.NewServiceUnavailable("etcd is down"),
		"timeout":     context.DeadlineExceeded,
	} {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset()
			client.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err })
			s := serve(t, CRRWebhook(client.CoreV1()))
			resp := s.send(t, crrRequest(t, crr("web", "main")))
			assert.True(t, resp.Allowed)
			require.Len(t, resp.Warnings, 1)
			assert.Contains(t, resp.Warnings[0], `kruise could not check pod "web" at admission`)
			assert.Contains(t, resp.Warnings[0], "kruise-controller answers in the object's status")
			assert.EqualValues(t, 0, s.rejections(t, "HandlerError"))
		})
	}
}

// The read of the pod gets a deadline that leaves time to answer before the
// API server's (the request's timeout).
func TestCRRWebhookReadLeavesTimeToAnswer(t *testing.T) {
	client := fake.NewClientset(webPod())
	var left time.Duration
	v := &crrValidator{pods: readDeadline{client.CoreV1(), &left}}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	res := v.Admit(ctx, crrRequest(t, crr("web", "main")))
	require.True(t, res.Allowed)
	assert.Greater(t, left, 2*time.Second)
	assert.LessOrEqual(t, left, 3*time.Second, "a quarter of the time is kept to answer")
}

func TestCRRWebhookLeavesOtherRequestsAlone(t *testing.T) {
	client := fake.NewClientset()
	s := serve(t, CRRWebhook(client.CoreV1()))
	update := crrRequest(t, crr("nope", "main"))
	update.Operation = admissionv1.Update
	status := crrRequest(t, crr("nope", "main"))
	status.SubResource = "status"
	undecodable := crrRequest(t, crr("nope", "main"))
	undecodable.Object.Raw = []byte(`{"spec":{"podName":42}}`)
	for name, req := range map[string]*admissionv1.AdmissionRequest{"update": update, "status": status, "undecodable": undecodable} {
		resp := s.send(t, req)
		assert.True(t, resp.Allowed, name)
	}
	assert.Empty(t, client.Actions(), "no pod is read for requests the webhook does not judge")
}

// Every reason the webhook refuses with is declared, so that the rejection
// metric counts it under its name, and kruise-controller's status path uses
// the same names.
func TestCRRWebhookDeclaresItsReasons(t *testing.T) {
	assert.ElementsMatch(t, []string{"PodNotFound", "PodTerminating", "PodFinished", "ContainerNotFound"}, CRRWebhook(nil).Reasons)
}

// readDeadline records how much time the pod's read was given.
type readDeadline struct {
	pods corev1client.PodsGetter
	left *time.Duration
}

func (r readDeadline) Pods(namespace string) corev1client.PodInterface {
	return deadlinePods{PodInterface: r.pods.Pods(namespace), left: r.left}
}

type deadlinePods struct {
	corev1client.PodInterface
	left *time.Duration
}

func (p deadlinePods) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error) {
	if dl, ok := ctx.Deadline(); ok {
		*p.left = time.Until(dl)
	}
	return p.PodInterface.Get(ctx, name, opts)
}
