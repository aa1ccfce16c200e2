package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruiseinformers "github.com/nodekruise/kruise/pkg/client/informers/externalversions"
	"github.com/nodekruise/kruise/pkg/contract/ejobaccess"
	"github.com/nodekruise/kruise/pkg/controller/ephemeraljob"
	"github.com/nodekruise/kruise/pkg/process/ctrlbase"
	"github.com/nodekruise/kruise/pkg/webhook/ejobrequester"
	"github.com/nodekruise/kruise/pkg/webhook/validate"
)

const ejobNS = "ejob"

// installEJobWebhooks creates the EphemeralJob entries of deploy/base/webhook.yaml (mutating and
// validating) with their webhooks calling the server at addr.
func installEJobWebhooks(t *testing.T, kube kubernetes.Interface, addr string, ca []byte) {
	t.Helper()
	installWebhookPair(t, kube, addr, ca, "mephemeraljob.kb.io", "vephemeraljob.kb.io", "ejob")
}

// installWebhookPair creates the mutating entry mutating and the validating entry validating of
// deploy/base/webhook.yaml, in configurations named prefix-mutating and prefix-validating, with
// their webhooks calling the server at addr.
func installWebhookPair(t *testing.T, kube kubernetes.Interface, addr string, ca []byte, mutating, validating, prefix string) {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/base/webhook.yaml")
	require.NoError(t, err)
	client := func(path string) admissionregistrationv1.WebhookClientConfig {
		url := "https://" + addr + path
		return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	found := 0
	for {
		var doc json.RawMessage
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		var head metav1.TypeMeta
		require.NoError(t, json.Unmarshal(doc, &head))
		switch head.Kind {
		case "MutatingWebhookConfiguration":
			var cfg admissionregistrationv1.MutatingWebhookConfiguration
			require.NoError(t, json.Unmarshal(doc, &cfg))
			var keep []admissionregistrationv1.MutatingWebhook
			for _, w := range cfg.Webhooks {
				if w.Name == mutating {
					w.ClientConfig = client(*w.ClientConfig.Service.Path)
					keep = append(keep, w)
				}
			}
			require.Len(t, keep, 1)
			cfg.Webhooks, cfg.ObjectMeta = keep, metav1.ObjectMeta{Name: prefix + "-mutating"}
			_, err = kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(context.Background(), &cfg, metav1.CreateOptions{})
			require.NoError(t, err)
			found++
		case "ValidatingWebhookConfiguration":
			var cfg admissionregistrationv1.ValidatingWebhookConfiguration
			require.NoError(t, json.Unmarshal(doc, &cfg))
			var keep []admissionregistrationv1.ValidatingWebhook
			for _, w := range cfg.Webhooks {
				if w.Name == validating {
					w.ClientConfig = client(*w.ClientConfig.Service.Path)
					keep = append(keep, w)
				}
			}
			require.Len(t, keep, 1)
			cfg.Webhooks, cfg.ObjectMeta = keep, metav1.ObjectMeta{Name: prefix + "-validating"}
			_, err = kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), &cfg, metav1.CreateOptions{})
			require.NoError(t, err)
			found++
		}
	}
	require.Equal(t, 2, found)
}

// bindRole binds user in ejobNS to a Role of rules.
func bindRole(t *testing.T, kube kubernetes.Interface, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	_, err := kube.RbacV1().Roles(ejobNS).Create(ctx(t), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.RbacV1().RoleBindings(ejobNS).Create(ctx(t), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// RBAC reaches the authorizer through its informers: wait until the rules are in force.
	for _, r := range rules {
		resource, sub, _ := strings.Cut(r.Resources[0], "/")
		name := ""
		if len(r.ResourceNames) > 0 {
			name = r.ResourceNames[0]
		}
		attrs := &authorizationv1.ResourceAttributes{Namespace: ejobNS, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: resource, Subresource: sub, Name: name}
		waitFor(t, user+"'s rules in force", func(ctx context.Context) (bool, error) {
			res, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: attrs}}, metav1.CreateOptions{})
			return err == nil && res.Status.Allowed, err
		})
	}
}

// TestEphemeralJobRequesterInAnAPIServer runs the EphemeralJob webhooks, as deploy/base configures
// them, and the controller against a real API server with RBAC: a user who may create
// EphemeralJobs but not exec into pods is refused at admission; one whose exec and
// ephemeral-container rights name one pod gets the containers added to that pod only (the other
// counted as failed); a requester annotation the user writes, at create or update, is overwritten
// with the user.
func TestEphemeralJobRequesterInAnAPIServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	_, err = kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ejobNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, sctx := ktesting.NewTestContext(t)
	addr, ca := serveWebhooks(t, sctx, ejobrequester.Webhook(), validate.EphemeralJobWebhook(kube))
	installEJobWebhooks(t, kube, addr, ca)

	for _, name := range []string{"p0", "p1"} {
		_, err := kube.CoreV1().Pods(ejobNS).Create(ctx(t), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	ejobs := rbacv1.PolicyRule{APIGroups: []string{"apps.kruise.io"}, Resources: []string{"ephemeraljobs"}, Verbs: []string{"create", "get", "update", "patch"}}
	bindRole(t, kube, "noexec", ejobs, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}})
	bindRole(t, kube, "p1only", ejobs,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}, ResourceNames: []string{"p1"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/ephemeralcontainers"}, Verbs: []string{"patch"}, ResourceNames: []string{"p1"}})

	job := func(name string) *v1alpha1.EphemeralJob {
		return &v1alpha1.EphemeralJob{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
				ejobaccess.RequesterAnnotation: `{"username":"system:admin","groups":["system:masters"]}`}},
			Spec: v1alpha1.EphemeralJobSpec{
				Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Parallelism: new(int32),
				Template: v1alpha1.EphemeralContainerTemplateSpec{EphemeralContainers: []corev1.EphemeralContainer{{
					EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox"}}}},
			},
		}
	}
	// The configurations take effect once the API server's informers have them.
	waitFor(t, "the webhooks to refuse a user without pods/exec", func(ctx context.Context) (bool, error) {
		_, err := as(t, c.config, "noexec").AppsV1alpha1().EphemeralJobs(ejobNS).Create(ctx, job("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "vephemeraljob.kb.io"), nil
	})
	_, err = as(t, c.config, "noexec").AppsV1alpha1().EphemeralJobs(ejobNS).Create(ctx(t), job("noexec"), metav1.CreateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `admission webhook "vephemeraljob.kb.io" denied the request`)
	assert.Contains(t, err.Error(), `user "noexec" may not create pods/exec and patch pods/ephemeralcontainers in namespace "ejob"`)

	p1only := as(t, c.config, "p1only").AppsV1alpha1().EphemeralJobs(ejobNS)
	j := job("some")
	*j.Spec.Parallelism = 2
	created, err := p1only.Create(ctx(t), j, metav1.CreateOptions{})
	require.NoError(t, err)
	r, err := ejobaccess.FromAnnotations(created.Annotations)
	require.NoError(t, err)
	assert.Equal(t, ejobaccess.Requester{Username: "p1only", Groups: []string{"system:authenticated"}}, r, "the forged requester overwritten")
	assert.Equal(t, corev1.PullAlways, created.Spec.Template.EphemeralContainers[0].ImagePullPolicy, "defaulted")

	// The controller, acting with the admin's client as kruise-controller does with its own.
	tctx, cancel := context.WithCancel(sctx)
	factory := informers.NewSharedInformerFactory(kube, 0)
	kf := kruiseinformers.NewSharedInformerFactory(c.kruise, 0)
	ctrl, err := ephemeraljob.New(ephemeraljob.Config{
		Config: ctrlbase.Config{Client: kube, KruiseClient: c.kruise},
		Jobs:   kf.Apps().V1alpha1().EphemeralJobs(),
		Pods:   factory.Core().V1().Pods(),
	})
	require.NoError(t, err)
	factory.Start(tctx.Done())
	kf.Start(tctx.Done())
	factory.WaitForCacheSync(tctx.Done())
	kf.WaitForCacheSync(tctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(tctx, 2) }()
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown(); kf.Shutdown() })

	waitFor(t, "the job to count p0 refused and p1 given the containers", func(ctx context.Context) (bool, error) {
		got, err := p1only.Get(ctx, "some", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.Failed == 1 && got.Status.Waiting == 1 && got.Status.Matches == 2, nil
	})
	for name, want := range map[string]int{"p0": 0, "p1": 1} {
		pod, err := kube.CoreV1().Pods(ejobNS).Get(ctx(t), name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Len(t, pod.Spec.EphemeralContainers, want, name)
		if want == 1 {
			assert.Contains(t, pod.Spec.EphemeralContainers[0].Env, corev1.EnvVar{Name: v1alpha1.EphemeralContainerEnvKey, Value: string(created.UID)})
		}
	}

	// An update that only rewrites the annotation is stamped again.
	patch := []byte(`{"metadata":{"annotations":{"` + ejobaccess.RequesterAnnotation + `":"{\"username\":\"system:admin\"}"}}}`)
	updated, err := p1only.Patch(ctx(t), "some", types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	r, err = ejobaccess.FromAnnotations(updated.Annotations)
	require.NoError(t, err)
	assert.Equal(t, "p1only", r.Username)
	// kruise-controller's writes (its finalizer) kept the stamp.
	assert.Contains(t, updated.Finalizers, ephemeraljob.Finalizer)
}
