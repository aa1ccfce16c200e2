package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruiseclient "github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	policyNS       = "crr-policy"
	controllerUser = "system:serviceaccount:kruise-system:kruise-controller"
	tenantUser     = "tenant"
)

// TestCRRReadOnlyFieldsPolicy runs the ValidatingAdmissionPolicy
// kruise-crr-read-only-fields as the chart renders it with webhook.enabled=false
// in a real API server: a user may create a ContainerRecreateRequest naming
// containers, never one carrying what kruise-controller writes at admission (a
// preStop hook of their own would make it an exec API), nor add or change that
// later; kruise-controller may. (With the webhooks, the default, the CRR
// mutating webhook refuses those at create instead: TestCRRFilledInAtCreate.)
func TestCRRReadOnlyFieldsPolicy(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	cx := context.Background()
	_, err = kube.CoreV1().Namespaces().Create(cx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: policyNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	installPolicy(t, kube, renderChartTemplate(t, "templates/crr-policy.yaml", "webhook.enabled=false"))
	grantCRRs(t, kube, tenantUser, controllerUser)
	tenant, controller := as(t, c.config, tenantUser), as(t, c.config, controllerUser)

	tenantCRRs := tenant.AppsV1alpha1().ContainerRecreateRequests(policyNS)
	controllerCRRs := controller.AppsV1alpha1().ContainerRecreateRequests(policyNS)
	newCRR := func(name string, mods ...gen.CRRModifier) *v1alpha1.ContainerRecreateRequest {
		crr := gen.CRR(name, gen.SetCRRNamespace(policyNS), gen.SetCRRPodName("web"), gen.SetCRRContainers("main", "sidecar"))
		return gen.CRRFrom(crr, mods...)
	}
	hook := &v1alpha1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/var/run/secrets/kubernetes.io/serviceaccount/token"}}}

	// The policy takes effect once the API server's policy informer has it:
	// wait until a forbidden create is refused.
	waitFor(t, "the policy to refuse a creator's preStop", func(ctx context.Context) (bool, error) {
		_, err := tenantCRRs.Create(ctx, newCRR("probe", func(c *v1alpha1.ContainerRecreateRequest) { c.Spec.Containers[0].PreStop = hook }), metav1.CreateOptions{})
		if err == nil {
			require.NoError(t, tenantCRRs.Delete(ctx, "probe", metav1.DeleteOptions{}))
			return false, nil
		}
		return strings.Contains(err.Error(), "kruise-crr-read-only-fields"), nil
	})

	refused := func(t *testing.T, err error, want string) {
		t.Helper()
		require.Error(t, err)
		require.True(t, apierrors.IsInvalid(err) || apierrors.IsForbidden(err), "%v", err)
		require.Contains(t, err.Error(), want)
	}
	t.Run("create with a preStop, ports or statusContext is refused", func(t *testing.T) {
		for name, mut := range map[string]gen.CRRModifier{
			"prestop": func(c *v1alpha1.ContainerRecreateRequest) { c.Spec.Containers[0].PreStop = hook },
			"ports": func(c *v1alpha1.ContainerRecreateRequest) {
				c.Spec.Containers[1].Ports = []corev1.ContainerPort{{ContainerPort: 80}}
			},
			"statuscontext": func(c *v1alpha1.ContainerRecreateRequest) {
				c.Spec.Containers[1].StatusContext = &v1alpha1.ContainerRecreateRequestContainerContext{ContainerID: "containerd://x"}
			},
		} {
			_, err := tenantCRRs.Create(ctx(t), newCRR(name, mut), metav1.CreateOptions{})
			refused(t, err, "spec.containers[].preStop, ports and statusContext are read-only")
		}
	})
	t.Run("through v1beta1 as well", func(t *testing.T) {
		beta := tenant.AppsV1beta1().ContainerRecreateRequests(policyNS)
		_, err := beta.Create(ctx(t), &v1beta1.ContainerRecreateRequest{
			ObjectMeta: metav1.ObjectMeta{Name: "beta-prestop", Namespace: policyNS},
			Spec: v1beta1.ContainerRecreateRequestSpec{PodName: "web", Containers: []v1beta1.ContainerRecreateRequestContainer{
				{Name: "main", PreStop: &v1beta1.CRRProbeHandler{Exec: hook.Exec}},
			}},
		}, metav1.CreateOptions{})
		refused(t, err, "spec.containers[].preStop, ports and statusContext are read-only")
	})
	t.Run("an empty list counts as set", func(t *testing.T) {
		// The typed client cannot send "ports: []" (omitempty): raw JSON.
		body := `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"ContainerRecreateRequest","metadata":{"name":"empty-ports"},
			"spec":{"podName":"web","containers":[{"name":"main","ports":[]}]}}`
		err := tenant.AppsV1alpha1().RESTClient().Post().Namespace(policyNS).Resource("containerrecreaterequests").
			Body([]byte(body)).SetHeader("Content-Type", "application/json").Do(ctx(t)).Error()
		refused(t, err, "(set in containers: main)")
	})
	t.Run("a plain request, with routing labels of the creator's, is accepted", func(t *testing.T) {
		_, err := tenantCRRs.Create(ctx(t), newCRR("plain", func(c *v1alpha1.ContainerRecreateRequest) {
			c.Labels = map[string]string{v1alpha1.ContainerRecreateRequestNodeNameKey: "somewhere"}
		}), metav1.CreateOptions{})
		require.NoError(t, err)
	})
	t.Run("the creator cannot add the fields later, nor change the routing", func(t *testing.T) {
		for name, patch := range map[string]string{
			"statusContext": `[{"op":"add","path":"/spec/containers/0/statusContext","value":{"containerID":"containerd://x","restartCount":0}}]`,
			"preStop":       `[{"op":"add","path":"/spec/containers/1/preStop","value":{"exec":{"command":["id"]}}}]`,
			"node label":    `[{"op":"replace","path":"/metadata/labels/crr.apps.kruise.io~1node-name","value":"elsewhere"}]`,
			"pod-uid label": `[{"op":"add","path":"/metadata/labels/crr.apps.kruise.io~1pod-uid","value":"u"}]`,
		} {
			t.Run(name, func(t *testing.T) {
				_, err := tenantCRRs.Patch(ctx(t), "plain", types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
				refused(t, err, "written by kruise-controller only")
			})
		}
		// Other labels are the creator's.
		_, err := tenantCRRs.Patch(ctx(t), "plain", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	})
	// What OpenKruise's webhook admits, this policy admits too: an absent
	// routing label counts as "", the active label is not protected
	// (kruise-controller puts it back on an unfinished request), and the
	// unready-acquired annotation is protected only once set.
	t.Run("the creator may do what OpenKruise admits", func(t *testing.T) {
		_, err := tenantCRRs.Create(ctx(t), newCRR("lenient"), metav1.CreateOptions{})
		require.NoError(t, err)
		for _, tc := range []struct{ name, patch string }{ // in this order
			{"empty pod-uid label", `[{"op":"add","path":"/metadata/labels","value":{"crr.apps.kruise.io/pod-uid":""}}]`},
			{"active label (adds)", `[{"op":"add","path":"/metadata/labels/crr.apps.kruise.io~1active","value":"true"}]`},
			{"active label (drops)", `[{"op":"remove","path":"/metadata/labels/crr.apps.kruise.io~1active"}]`},
			{"unready annotation", `[{"op":"add","path":"/metadata/annotations","value":{"crr.apps.kruise.io/unready-acquired":"2025-01-01T00:00:00Z"}}]`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := tenantCRRs.Patch(ctx(t), "lenient", types.JSONPatchType, []byte(tc.patch), metav1.PatchOptions{})
				require.NoError(t, err)
			})
		}
	})
	t.Run("kruise-controller admits", func(t *testing.T) {
		patch := `[
			{"op":"replace","path":"/metadata/labels/crr.apps.kruise.io~1node-name","value":"node-a"},
			{"op":"add","path":"/metadata/labels/crr.apps.kruise.io~1pod-uid","value":"u"},
			{"op":"add","path":"/metadata/labels/crr.apps.kruise.io~1active","value":"true"},
			{"op":"add","path":"/metadata/annotations","value":{"crr.apps.kruise.io/unready-acquired":"2025-01-01T00:00:00Z"}},
			{"op":"add","path":"/spec/containers/0/statusContext","value":{"containerID":"containerd://a","restartCount":0}},
			{"op":"add","path":"/spec/containers/0/preStop","value":{"exec":{"command":["drain"]}}},
			{"op":"add","path":"/spec/containers/1/statusContext","value":{"containerID":"containerd://b","restartCount":0}}]`
		got, err := controllerCRRs.Patch(ctx(t), "plain", types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
		require.True(t, v1alpha1.IsRouted(got))
		// ... and the creator still cannot change or remove what routes it.
		_, err = tenantCRRs.Patch(ctx(t), "plain", types.MergePatchType, []byte(`{"metadata":{"labels":{"crr.apps.kruise.io/pod-uid":null}}}`), metav1.PatchOptions{})
		refused(t, err, "written by kruise-controller only")
		for _, value := range []string{`"2030-01-01T00:00:00Z"`, `""`, `null`} {
			_, err = tenantCRRs.Patch(ctx(t), "plain", types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"crr.apps.kruise.io/unready-acquired":`+value+`}}}`), metav1.PatchOptions{})
			refused(t, err, "annotation crr.apps.kruise.io/unready-acquired, once set, is written by kruise-controller only")
		}
		// kruise-controller removes the active label of a finished request.
		_, err = controllerCRRs.Patch(ctx(t), "plain", types.MergePatchType, []byte(`{"metadata":{"labels":{"crr.apps.kruise.io/active":null}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	})
}

// renderChartTemplate renders one template of the chart with values set, into
// a file it returns.
func renderChartTemplate(t *testing.T, template string, set ...string) string {
	t.Helper()
	args := []string{"template", "kruise", filepath.Join("..", "..", "deploy", "charts", "kruise"),
		"--kube-version", k8sVersion, "--namespace", "kruise-system", "--show-only", template}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helmForTest(t), args...)
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+tmp, "HELM_CONFIG_HOME="+tmp, "HELM_DATA_HOME="+tmp)
	out, err := cmd.Output()
	require.NoError(t, err, "helm template")
	file := filepath.Join(tmp, "rendered.yaml")
	require.NoError(t, os.WriteFile(file, out, 0o600))
	return file
}

// installPolicy creates the ValidatingAdmissionPolicy and its binding in
// file (as rendered into deploy/base).
func installPolicy(t *testing.T, kube kubernetes.Interface, file string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	require.NoError(t, dec.Decode(&policy))
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	require.NoError(t, dec.Decode(&binding))
	require.Equal(t, "ValidatingAdmissionPolicy", policy.Kind)
	require.Equal(t, "ValidatingAdmissionPolicyBinding", binding.Kind)
	_, err = kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(context.Background(), &policy, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(context.Background(), &binding, metav1.CreateOptions{})
	require.NoError(t, err)
}

// grantCRRs lets users write ContainerRecreateRequests (RBAC is on).
func grantCRRs(t *testing.T, kube kubernetes.Interface, users ...string) {
	t.Helper()
	cx := context.Background()
	_, err := kube.RbacV1().ClusterRoles().Create(cx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "crr-writer"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps.kruise.io"}, Resources: []string{"containerrecreaterequests"},
			Verbs: []string{"get", "list", "create", "update", "patch", "delete"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i, u := range users {
		_, err := kube.RbacV1().ClusterRoleBindings().Create(cx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("crr-writer-%d", i)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "crr-writer"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: u}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// as is a kruise client that acts as user (impersonated by the admin).
func as(t *testing.T, cfg *rest.Config, user string) kruiseclient.Interface {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user}
	k, err := kruiseclient.NewForConfig(c)
	require.NoError(t, err)
	return k
}
