package validate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func validEJob() *appsv1alpha1.EphemeralJob {
	return &appsv1alpha1.EphemeralJob{
		ObjectMeta: metav1.ObjectMeta{Name: "debug", Namespace: ns},
		Spec: appsv1alpha1.EphemeralJobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: appsv1alpha1.EphemeralContainerTemplateSpec{EphemeralContainers: []corev1.EphemeralContainer{{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1.36",
					ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile},
			}}},
		},
	}
}

// allowSAR answers SubjectAccessReviews with allowed(user, attributes).
func allowSAR(client *fake.Clientset, allowed func(user string, ra *authorizationv1.ResourceAttributes) bool) {
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		sar.Status.Allowed = allowed(sar.Spec.User, sar.Spec.ResourceAttributes)
		return true, sar, nil
	})
}

func admitEJob(t *testing.T, client *fake.Clientset, job *appsv1alpha1.EphemeralJob, user string) (allowed bool, reason, msg string, warnings []string) {
	t.Helper()
	req := request(t, "ephemeraljobs", "EphemeralJob", job, "v1alpha1")
	req.UserInfo = authenticationv1.UserInfo{Username: user}
	res := EphemeralJobWebhook(client).Admitter.Admit(context.Background(), req)
	require.NoError(t, res.Err)
	return res.Allowed, res.Reason, res.Message, res.Warnings
}

// OpenKruise's rules of ephemeral containers, the selector, and kruise's mark.
func TestEphemeralJobRules(t *testing.T) {
	client := fake.NewClientset()
	allowSAR(client, func(string, *authorizationv1.ResourceAttributes) bool { return true })
	for name, tc := range map[string]struct {
		mutate func(*appsv1alpha1.EphemeralJob)
		reason string
		field  string
	}{
		"no selector":      {func(j *appsv1alpha1.EphemeralJob) { j.Spec.Selector = nil }, ReasonInvalidSelector, "spec.selector"},
		"bad selector":     {func(j *appsv1alpha1.EphemeralJob) { j.Spec.Selector.MatchLabels = map[string]string{"a": "b c"} }, ReasonInvalidSelector, "spec.selector"},
		"no image":         {func(j *appsv1alpha1.EphemeralJob) { j.Spec.Template.EphemeralContainers[0].Image = "" }, ReasonInvalidEphemeralContainers, "image"},
		"image whitespace": {func(j *appsv1alpha1.EphemeralJob) { j.Spec.Template.EphemeralContainers[0].Image = " busybox" }, ReasonInvalidEphemeralContainers, "image"},
		"bad name":         {func(j *appsv1alpha1.EphemeralJob) { j.Spec.Template.EphemeralContainers[0].Name = "Debug_1" }, ReasonInvalidEphemeralContainers, "name"},
		"no pull policy":   {func(j *appsv1alpha1.EphemeralJob) { j.Spec.Template.EphemeralContainers[0].ImagePullPolicy = "" }, ReasonInvalidEphemeralContainers, "imagePullPolicy"},
		"no message policy": {func(j *appsv1alpha1.EphemeralJob) {
			j.Spec.Template.EphemeralContainers[0].TerminationMessagePolicy = ""
		}, ReasonInvalidEphemeralContainers, "terminationMessagePolicy"},
		"ports": {func(j *appsv1alpha1.EphemeralJob) {
			j.Spec.Template.EphemeralContainers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}}
		}, ReasonInvalidEphemeralContainers, "ports"},
		"probe": {func(j *appsv1alpha1.EphemeralJob) {
			j.Spec.Template.EphemeralContainers[0].ReadinessProbe = &corev1.Probe{}
		}, ReasonInvalidEphemeralContainers, "readinessProbe"},
		"resources": {func(j *appsv1alpha1.EphemeralJob) {
			j.Spec.Template.EphemeralContainers[0].Resources.Limits = corev1.ResourceList{"cpu": {}}
		}, ReasonInvalidEphemeralContainers, "resources"},
		"subPath": {func(j *appsv1alpha1.EphemeralJob) {
			j.Spec.Template.EphemeralContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v", SubPath: "x"}}
		}, ReasonInvalidEphemeralContainers, "subPath"},
		"kruise's env": {func(j *appsv1alpha1.EphemeralJob) {
			j.Spec.Template.EphemeralContainers[0].Env = []corev1.EnvVar{{Name: "KRUISE_EJOB_ID", Value: "x"}}
		}, ReasonInvalidEphemeralContainers, "env[0].name"},
		"duplicate name": {func(j *appsv1alpha1.EphemeralJob) {
			j.Spec.Template.EphemeralContainers = append(j.Spec.Template.EphemeralContainers, j.Spec.Template.EphemeralContainers[0])
		}, ReasonInvalidEphemeralContainers, "ephemeralContainers[1].name"},
		"negative replicas": {func(j *appsv1alpha1.EphemeralJob) { j.Spec.Replicas = ptr.To[int32](-1) }, ReasonInvalidEphemeralContainers, "spec.replicas"},
		"zero deadline":     {func(j *appsv1alpha1.EphemeralJob) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) }, ReasonInvalidEphemeralContainers, "activeDeadlineSeconds"},
	} {
		job := validEJob()
		tc.mutate(job)
		allowed, reason, msg, _ := admitEJob(t, client, job, "alice")
		assert.False(t, allowed, name)
		assert.Equal(t, tc.reason, reason, name)
		assert.Contains(t, msg, tc.field, name)
	}
	allowed, _, msg, _ := admitEJob(t, client, validEJob(), "alice")
	assert.True(t, allowed, msg)
	empty := validEJob()
	empty.Spec.Template.EphemeralContainers = nil
	allowed, _, _, _ = admitEJob(t, client, empty, "alice")
	assert.True(t, allowed, "an empty template is the controller's Error phase, as OpenKruise")
}

// A requester without pods/exec (or ephemeralcontainers) in the namespace, nor on any matching
// pod, is refused, naming what is missing; one whose rights cover some matching pods is admitted
// with a warning.
func TestEphemeralJobRequester(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"}}}
	}
	client := fake.NewClientset(pod("web-0"), pod("web-1"))
	allowSAR(client, func(user string, ra *authorizationv1.ResourceAttributes) bool {
		switch user {
		case "admin":
			return true
		case "ec-only":
			return ra.Subresource == "ephemeralcontainers"
		case "web-1-only":
			return ra.Name == "web-1"
		}
		return false
	})
	allowed, _, _, warnings := admitEJob(t, client, validEJob(), "admin")
	assert.True(t, allowed)
	assert.Empty(t, warnings)

	for _, user := range []string{"nobody", "ec-only"} {
		allowed, reason, msg, _ := admitEJob(t, client, validEJob(), user)
		assert.False(t, allowed, user)
		assert.Equal(t, ReasonRequesterForbidden, reason)
		assert.Contains(t, msg, `user "`+user+`" may not create pods/exec and patch pods/ephemeralcontainers in namespace "team"`)
		assert.Contains(t, msg, "denied: create pods/exec")
	}

	allowed, _, _, warnings = admitEJob(t, client, validEJob(), "web-1-only")
	assert.True(t, allowed, "rights on one matching pod by name")
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "only to the pods the user may exec into")
}

// An update (of the spec, or of the requester) is judged as a create: its sender must hold the
// rights, whoever created the job.
func TestEphemeralJobUpdateJudgesTheEditor(t *testing.T) {
	client := fake.NewClientset()
	allowSAR(client, func(user string, _ *authorizationv1.ResourceAttributes) bool { return user == "admin" })
	req := request(t, "ephemeraljobs", "EphemeralJob", validEJob(), "v1alpha1")
	req.Operation, req.OldObject = admissionv1.Update, req.Object
	req.UserInfo = authenticationv1.UserInfo{Username: "nobody"}
	res := EphemeralJobWebhook(client).Admitter.Admit(context.Background(), req)
	assert.False(t, res.Allowed)
	assert.Equal(t, ReasonRequesterForbidden, res.Reason)
	req.UserInfo = authenticationv1.UserInfo{Username: "admin"}
	assert.True(t, EphemeralJobWebhook(client).Admitter.Admit(context.Background(), req).Allowed)
	req.SubResource = "status"
	req.UserInfo = authenticationv1.UserInfo{Username: "nobody"}
	assert.True(t, EphemeralJobWebhook(client).Admitter.Admit(context.Background(), req).Allowed, "status is not judged")
}
