// Package chart lints and renders the Helm chart (deploy/charts/kruise) with the helm binary
// that hack/build-k8s.sh builds from the Go module proxy, and checks what each value does to the
// rendered objects. The chart's install on a real cluster is covered by the e2e phase.
package chart

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/storageversion"
)

const kubeVersion = "v1.34.10"

// helmBinary is $KRUISE_HELM, else the newest helm in the build cache.
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("KRUISE_HELM"); h != "" {
		return h
	}
	cache := os.Getenv("KRUISE_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "kruise")
	}
	found, _ := filepath.Glob(filepath.Join(cache, "helm", "*", "bin", "helm"))
	if len(found) == 0 {
		t.Skipf("helm is not built (no %s/helm/*/bin/helm): run make deps", cache)
	}
	sort.Strings(found)
	return found[len(found)-1]
}

func chartDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "deploy", "charts", "kruise"))
	require.NoError(t, err)
	return dir
}

func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	// Keep helm's cache and config out of $HOME.
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+tmp, "HELM_CONFIG_HOME="+tmp, "HELM_DATA_HOME="+tmp)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err != nil {
		return out.String() + stderr.String(), err
	}
	return out.String(), nil
}

// rendered is the chart's output as typed objects, keyed "Kind/namespace/name".
type rendered map[string]runtime.Object

func render(t *testing.T, args ...string) rendered {
	t.Helper()
	out, err := runHelm(t, append([]string{"template", "kruise", chartDir(t), "--kube-version", kubeVersion}, args...)...)
	require.NoError(t, err, out)
	objs := rendered{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err != nil {
			break
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 || string(bytes.TrimSpace(raw.Raw)) == "null" {
			continue
		}
		obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(raw.Raw, nil, nil)
		require.NoError(t, err, "rendered object does not decode into its API type:\n%s", raw.Raw)
		m, err := meta.Accessor(obj)
		require.NoError(t, err)
		key := gvk.Kind + "/" + m.GetNamespace() + "/" + m.GetName()
		require.NotContains(t, objs, key, "rendered twice")
		objs[key] = obj
	}
	require.NotEmpty(t, objs, "nothing rendered:\n%s", out)
	return objs
}

func (r rendered) keys() []string {
	var ks []string
	for k := range r {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func TestLint(t *testing.T) {
	for name, args := range map[string][]string{
		"defaults":                 nil,
		"local cluster values":     {"-f", filepath.Join(chartDir(t), "..", "..", "overlays", "local", "values.yaml")},
		"OpenKruise-style values":  {"-f", filepath.Join(chartDir(t), "ci", "openkruise-values.yaml")},
		"without daemon":           {"--set", "featureGates=KruiseDaemon=false"},
		"webhook on":               {"--set", "webhook.enabled=true,webhook.conversion.enabled=true"},
		"credential provider, aws": {"-f", filepath.Join(chartDir(t), "ci", "credential-provider-values.yaml")},
		"monitoring on":            monitoringOn,
	} {
		t.Run(name, func(t *testing.T) {
			out, err := runHelm(t, append([]string{"lint", "--strict", chartDir(t), "--kube-version", kubeVersion}, args...)...)
			require.NoError(t, err, out)
			assert.Contains(t, out, "0 chart(s) failed")
		})
	}
}

// The defaults serve the webhooks, as OpenKruise always does: their Service, configurations,
// certificate RBAC, and the pre-delete hook that resets CRD conversion on helm uninstall.
func TestRenderDefaults(t *testing.T) {
	objs := render(t)
	assert.Equal(t, []string{
		"ClusterRole//kruise-controller",
		"ClusterRole//kruise-conversion-hook",
		"ClusterRole//kruise-daemon",
		"ClusterRoleBinding//kruise-controller",
		"ClusterRoleBinding//kruise-conversion-hook",
		"ClusterRoleBinding//kruise-daemon",
		"DaemonSet/kruise-system/kruise-daemon",
		"Deployment/kruise-system/kruise-controller",
		"Job/kruise-system/kruise-conversion-reset",
		"MutatingWebhookConfiguration//kruise-mutating-webhook-configuration",
		"Namespace//kruise-daemon-config",
		"Namespace//kruise-system",
		"Role/kruise-daemon-config/kruise-controller-pull-secret-copies",
		"Role/kruise-daemon-config/kruise-daemon-pull-secrets",
		"Role/kruise-system/kruise-controller-daemon-heartbeats",
		"Role/kruise-system/kruise-controller-leader-election",
		"Role/kruise-system/kruise-controller-webhook-certs",
		"Role/kruise-system/kruise-daemon-heartbeat",
		"RoleBinding/kruise-daemon-config/kruise-controller-pull-secret-copies",
		"RoleBinding/kruise-daemon-config/kruise-daemon-pull-secrets",
		"RoleBinding/kruise-system/kruise-controller-daemon-heartbeats",
		"RoleBinding/kruise-system/kruise-controller-leader-election",
		"RoleBinding/kruise-system/kruise-controller-webhook-certs",
		"RoleBinding/kruise-system/kruise-daemon-heartbeat",
		"Service/kruise-system/kruise-webhook-service",
		"ServiceAccount/kruise-system/kruise-controller",
		"ServiceAccount/kruise-system/kruise-conversion-hook",
		"ServiceAccount/kruise-system/kruise-daemon",
		"ValidatingAdmissionPolicy//kruise-api-warnings",
		"ValidatingAdmissionPolicy//kruise-crr-read-only-fields",
		"ValidatingAdmissionPolicy//kruise-daemon-node-scope",
		"ValidatingAdmissionPolicyBinding//kruise-api-warnings",
		"ValidatingAdmissionPolicyBinding//kruise-crr-read-only-fields",
		"ValidatingAdmissionPolicyBinding//kruise-daemon-node-scope",
		"ValidatingWebhookConfiguration//kruise-validating-webhook-configuration",
	}, objs.keys())

	for key, obj := range objs {
		m, _ := meta.Accessor(obj)
		assert.Equal(t, "kruise", m.GetLabels()["app.kubernetes.io/part-of"], "%s lacks the part-of label (uninstall checks and kubectl -l rely on it)", key)
	}

	ctl := objs.deployment(t)
	assert.EqualValues(t, 2, *ctl.Spec.Replicas, "HA by default")
	c := ctl.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "kruise-controller:v0.1.0", c.Image, "the tag defaults to the appVersion")
	assert.Contains(t, c.Args, "--feature-gates=")
	assert.Contains(t, c.Args, "--logging-format=text")
	assert.Contains(t, c.Args, "--addr=:10222")
	assert.Contains(t, c.Args, "--webhook-enabled=true")
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	assert.False(t, ctl.Spec.Template.Spec.HostNetwork)
	require.NotNil(t, c.SecurityContext.ReadOnlyRootFilesystem)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)

	ds := objs.daemonSet(t)
	d := ds.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "kruise-daemon:v0.1.0", d.Image)
	assert.Contains(t, d.Args, "--addr=:10223", "off OpenKruise's 10221")
	assert.NotContains(t, strings.Join(d.Args, " "), "--socket-file", "empty socketFile: probe")
	assert.Equal(t, "/var/run", ds.Spec.Template.Spec.Volumes[0].HostPath.Path)
	assert.True(t, ds.Spec.Template.Spec.HostNetwork)
	// The pause container, PID 1 of the shared namespace, reaps what a
	// killed credential plugin leaves behind.
	require.NotNil(t, ds.Spec.Template.Spec.ShareProcessNamespace)
	assert.True(t, *ds.Spec.Template.Spec.ShareProcessNamespace)
	assert.Equal(t, []string{"NODE_NAME", "POD_NAME", "POD_NAMESPACE"}, envNames(d.Env))
	assert.Equal(t, "Exists", string(ds.Spec.Template.Spec.Tolerations[0].Operator))
}

func TestRenderWithoutDaemon(t *testing.T) {
	objs := render(t, "--set", "featureGates=SidecarTerminator=true\\, KruiseDaemon=false")
	for _, key := range objs.keys() {
		assert.NotContains(t, key, "kruise-daemon/", "KruiseDaemon=false deploys nothing of the daemon")
		assert.False(t, strings.HasSuffix(key, "/kruise-daemon"), "KruiseDaemon=false leaves out %s", key)
	}
	assert.Contains(t, objs, "Deployment/kruise-system/kruise-controller")
	assert.Contains(t, objs.deployment(t).Spec.Template.Spec.Containers[0].Args,
		"--feature-gates=SidecarTerminator=true, KruiseDaemon=false", "the controller gets the gates verbatim")
}

func TestRenderValues(t *testing.T) {
	objs := render(t,
		"--set", "featureGates=ImagePullJobGate=false",
		"--set", "manager.loggingFormat=json,daemon.loggingFormat=json",
		"--set", "manager.log.level=4,daemon.log.level=5",
		"--set", "daemon.socketLocation=/run/k3s/containerd,daemon.socketFile=containerd.sock",
		"--set", "manager.image.repository=registry.example/kruise-controller,manager.image.tag=v9",
		"--set", "daemon.image.repository=registry.example/kruise-daemon,daemon.image.digest=sha256:0123",
		"--set", "manager.replicas=3",
		"--set", "manager.resources.limits.memory=1Gi,daemon.resources.limits.memory=64Mi",
		"--set", "manager.nodeSelector.role=infra,daemon.nodeSelector.kruise=yes",
		"--set", "manager.tolerations[0].key=infra,manager.tolerations[0].operator=Exists",
		"--set", "daemon.tolerations[0].key=gpu,daemon.tolerations[0].operator=Exists",
		"--set", "daemon.port=9999,daemon.bindAddress=127.0.0.1",
		"--set", "imagePullSecrets[0].name=regcred",
	)
	ctl := objs.deployment(t)
	c := ctl.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "registry.example/kruise-controller:v9", c.Image)
	assert.Contains(t, c.Args, "--logging-format=json")
	assert.Contains(t, c.Args, "--v=4")
	assert.Contains(t, c.Args, "--feature-gates=ImagePullJobGate=false")
	assert.EqualValues(t, 3, *ctl.Spec.Replicas)
	assert.Equal(t, "1Gi", c.Resources.Limits.Memory().String())
	assert.Equal(t, map[string]string{"role": "infra"}, ctl.Spec.Template.Spec.NodeSelector)
	assert.Equal(t, "infra", ctl.Spec.Template.Spec.Tolerations[0].Key)
	assert.Equal(t, "regcred", ctl.Spec.Template.Spec.ImagePullSecrets[0].Name)

	ds := objs.daemonSet(t)
	d := ds.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "registry.example/kruise-daemon@sha256:0123", d.Image, "a digest wins over the tag")
	assert.Contains(t, d.Args, "--logging-format=json")
	assert.Contains(t, d.Args, "--v=5")
	assert.Contains(t, d.Args, "--socket-file=containerd.sock")
	assert.Contains(t, d.Args, "--feature-gates=ImagePullJobGate=false")
	assert.Contains(t, d.Args, "--addr=127.0.0.1:9999")
	assert.Equal(t, "127.0.0.1", d.LivenessProbe.HTTPGet.Host)
	assert.Equal(t, 9999, d.ReadinessProbe.HTTPGet.Port.IntValue())
	assert.Equal(t, "/run/k3s/containerd", ds.Spec.Template.Spec.Volumes[0].HostPath.Path)
	assert.Equal(t, "64Mi", d.Resources.Limits.Memory().String())
	assert.Equal(t, map[string]string{"kruise": "yes"}, ds.Spec.Template.Spec.NodeSelector)
	assert.Equal(t, "gpu", ds.Spec.Template.Spec.Tolerations[0].Key)
	assert.Len(t, ds.Spec.Template.Spec.Tolerations, 1, "the value replaces the tolerate-all default")
	assert.Equal(t, "regcred", ds.Spec.Template.Spec.ImagePullSecrets[0].Name)
}

func TestRenderCredentialProvider(t *testing.T) {
	objs := render(t, "-f", filepath.Join(chartDir(t), "ci", "credential-provider-values.yaml"))
	ds := objs.daemonSet(t)
	d := ds.Spec.Template.Spec.Containers[0]
	assert.Contains(t, d.Args, "--credential-provider-config=/credential-provider-config/CredentialProviderPlugin.yaml")
	assert.Contains(t, d.Args, "--credential-provider-bin-dir=/credential-provider-plugin")
	assert.Contains(t, envNames(d.Env), "HOME", "ecr-credential-provider finds ~/.aws through $HOME")
	volumes := map[string]string{}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		switch {
		case v.HostPath != nil:
			volumes[v.Name] = v.HostPath.Path
		case v.ConfigMap != nil:
			volumes[v.Name] = "configmap:" + v.ConfigMap.Name
		}
	}
	assert.Equal(t, map[string]string{
		"runtime-sockets":            "/var/run",
		"credential-provider-config": "configmap:ecr-provider",
		"credential-provider-plugin": "/opt/ecr/bin",
		"aws-credentials":            "/root/.aws-node",
	}, volumes)
	mounts := map[string]string{}
	for _, m := range d.VolumeMounts {
		mounts[m.Name] = m.MountPath
		// The daemon reloads a changed config: the kubelet updates a ConfigMap volume in place,
		// but never a file mounted with subPath.
		assert.Empty(t, m.SubPath, "volume mount %s", m.Name)
	}
	assert.Equal(t, "/root/.aws", mounts["aws-credentials"])
	assert.Equal(t, "/credential-provider-config", mounts["credential-provider-config"])

	cm, ok := objs["ConfigMap/kruise-system/ecr-provider"]
	require.True(t, ok, "daemon.credentialProvider.config creates the ConfigMap; got %v", objs.keys())
	data := cm.(*corev1.ConfigMap).Data
	assert.Contains(t, data["CredentialProviderPlugin.yaml"], "ecr-credential-provider", "the config under OpenKruise's key")
}

// Without the webhooks (whose port would be a host port too): several host-network replicas can
// share a node.
func TestRenderHostNetworkUnixSocket(t *testing.T) {
	objs := render(t, "--set", "webhook.enabled=false,manager.hostNetwork=true,manager.addr=unix:///run/kruise/controller.sock")
	ctl := objs.deployment(t)
	spec := ctl.Spec.Template.Spec
	c := spec.Containers[0]
	assert.True(t, spec.HostNetwork)
	assert.Empty(t, c.Ports, "no host port: two replicas share the node")
	require.NotNil(t, c.ReadinessProbe.Exec)
	assert.Equal(t, []string{"/usr/local/bin/kruise-controller", "probe", "--addr=unix:///run/kruise/controller.sock", "/readyz"},
		c.ReadinessProbe.Exec.Command)
	assert.Equal(t, "/run/kruise", c.VolumeMounts[0].MountPath)
	require.NotNil(t, spec.Volumes[0].EmptyDir, "each replica's socket lives in its own emptyDir")
	assert.Nil(t, ctl.Spec.Strategy.RollingUpdate, "no port to hand over: the default surge is fine")
}

func TestRenderOtherNamespace(t *testing.T) {
	objs := render(t, "--set", "installation.namespace=platform-kruise")
	for _, key := range objs.keys() {
		parts := strings.SplitN(key, "/", 3)
		if parts[1] != "" {
			assert.Contains(t, []string{"platform-kruise", "kruise-daemon-config"}, parts[1], key)
		}
	}
	assert.Contains(t, objs, "Namespace//platform-kruise")
	vap := objs["ValidatingAdmissionPolicy//kruise-daemon-node-scope"]
	require.NotNil(t, vap)
	var conditions []string
	for _, c := range vap.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.MatchConditions {
		conditions = append(conditions, c.Expression)
	}
	assert.Contains(t, strings.Join(conditions, "\n"), "system:serviceaccount:platform-kruise:kruise-daemon",
		"the policy matches the daemon's service account in the release's namespace")
	crrPolicy := objs["ValidatingAdmissionPolicy//kruise-crr-read-only-fields"]
	require.NotNil(t, crrPolicy)
	conditions = nil
	for _, c := range crrPolicy.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.MatchConditions {
		conditions = append(conditions, c.Expression)
	}
	assert.Contains(t, strings.Join(conditions, "\n"), "system:serviceaccount:platform-kruise:kruise-controller",
		"the CRR policy exempts the controller's service account in the release's namespace")
}

// crrReadOnlyFieldsPolicy=false leaves the CRR policy out (the controller and
// the daemon still refuse what it refuses).
func TestRenderWithoutCRRPolicy(t *testing.T) {
	objs := render(t, "--set", "crrReadOnlyFieldsPolicy=false")
	assert.NotContains(t, objs, "ValidatingAdmissionPolicy//kruise-crr-read-only-fields")
	assert.NotContains(t, objs, "ValidatingAdmissionPolicyBinding//kruise-crr-read-only-fields")
	assert.Contains(t, objs, "ValidatingAdmissionPolicy//kruise-daemon-node-scope")
}

// The warnings policy only warns, and never stands in the way of a write;
// apiWarningsPolicy=false leaves it out.
func TestRenderAPIWarnings(t *testing.T) {
	objs := render(t)
	binding, ok := objs["ValidatingAdmissionPolicyBinding//kruise-api-warnings"].(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
	require.True(t, ok)
	assert.Equal(t, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}, binding.Spec.ValidationActions)
	policy, ok := objs["ValidatingAdmissionPolicy//kruise-api-warnings"].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	require.True(t, ok)
	require.NotNil(t, policy.Spec.FailurePolicy)
	assert.Equal(t, admissionregistrationv1.Ignore, *policy.Spec.FailurePolicy)

	objs = render(t, "--set", "apiWarningsPolicy=false")
	assert.NotContains(t, objs, "ValidatingAdmissionPolicy//kruise-api-warnings")
	assert.NotContains(t, objs, "ValidatingAdmissionPolicyBinding//kruise-api-warnings")
}

func TestRenderRejectsBadLoggingFormat(t *testing.T) {
	out, err := runHelm(t, "template", "kruise", chartDir(t), "--kube-version", kubeVersion, "--set", "daemon.loggingFormat=xml")
	require.Error(t, err)
	assert.Contains(t, out, `loggingFormat must be text or json, got "xml"`)
}

func TestRefusesOldKubernetes(t *testing.T) {
	out, err := runHelm(t, "template", "kruise", chartDir(t), "--kube-version", "v1.29.9")
	require.Error(t, err)
	assert.Contains(t, out, ">=1.30.0")
}

func (r rendered) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	obj, ok := r["Deployment/kruise-system/kruise-controller"]
	require.True(t, ok, "no controller Deployment in %v", r.keys())
	return obj.(*appsv1.Deployment)
}

func (r rendered) daemonSet(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	obj, ok := r["DaemonSet/kruise-system/kruise-daemon"]
	require.True(t, ok, "no daemon DaemonSet in %v", r.keys())
	return obj.(*appsv1.DaemonSet)
}

func envNames(env []corev1.EnvVar) []string {
	var names []string
	for _, e := range env {
		names = append(names, e.Name)
	}
	return names
}

// The controller may read and write the status of exactly the CRDs its storage version migration
// looks after, may patch every kind's objects (the empty patch that rewrites them), and may update
// the finalizers of every kind that owns what it creates (OwnerReferencesPermissionEnforcement).
func TestRenderControllerRBACForMigrationAndOwners(t *testing.T) {
	for _, args := range [][]string{nil, {"--set", "webhook.enabled=true"}} {
		rules := render(t, args...).clusterRoleRules(t)
		var names []string
		for _, c := range storageversion.KruiseCRDs {
			names = append(names, c.Name)
		}
		status := ruleFor(rules, "customresourcedefinitions/status")
		require.NotNil(t, status)
		assert.ElementsMatch(t, names, status.ResourceNames)
		assert.Equal(t, []string{"update"}, status.Verbs)
		for _, kind := range []string{"containerrecreaterequests", "imagepulljobs", "imagelistpulljobs", "nodeimages", "clonesets", "daemonsets", "statefulsets", "sidecarsets", "broadcastjobs", "advancedcronjobs"} {
			assert.True(t, allows(rules, "apps.kruise.io", kind, "patch"), "patch %s", kind)
			assert.True(t, allows(rules, "apps.kruise.io", kind, "list"), "list %s", kind)
		}
		for _, owner := range []string{"clonesets", "statefulsets", "daemonsets", "sidecarsets", "imagelistpulljobs", "broadcastjobs", "advancedcronjobs"} {
			assert.True(t, allows(rules, "apps.kruise.io", owner+"/finalizers", "update"), "update %s/finalizers", owner)
		}
		assert.False(t, allows(rules, "", "configmaps", "delete"), "no ConfigMap is deleted")
	}
}

// allows is whether some rule grants verb on group/resource, for every name.
func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) && len(r.ResourceNames) == 0 {
			return true
		}
	}
	return false
}

// The warnings policy names exactly the pod keys the controllers never copy from a template.
func TestRenderAPIWarningsReservedKeys(t *testing.T) {
	vap := render(t)["ValidatingAdmissionPolicy//kruise-api-warnings"].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	celList := func(keys []string) string {
		q := make([]string, len(keys))
		for i, k := range keys {
			q[i] = "'" + k + "'"
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	var expr string
	for _, v := range vap.Spec.Variables {
		if v.Name == "reservedKeys" {
			expr = v.Expression
		}
	}
	require.NotEmpty(t, expr, "no reservedKeys variable")
	assert.Contains(t, expr, celList(appsv1beta1.ReservedPodLabels)+".filter(")
	assert.Contains(t, expr, celList(appsv1beta1.ReservedPodAnnotations)+".filter(")
}
