package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const dpLabel = "policy.kruise.io/delete-protection"

// dpObject is one kind the policy protects: how to create one labelled value with replicas (or
// nodes scheduled, for DaemonSets) and how to delete it.
type dpObject struct {
	kind, resource string
	namespaced     bool
	// fullName is the object's name for name (nil: name).
	fullName func(name string) string
	create   func(t *testing.T, ns, name, value string, replicas int32)
	del      func(ns, name string) error
	unlabel  func(ns, name string) error
}

// TestDeletionProtectionPolicy runs the ValidatingAdmissionPolicy kruise-deletion-protection as
// the chart renders it with ResourcesDeletionProtection (and the CRD gate) in a real API server,
// no kruise running: Always refuses the deletion of every kind, Cascading refuses workloads that
// still have replicas (DaemonSets: scheduled nodes) and admits them at 0, other values and
// objects already being deleted are admitted, kube-system is never judged, and the refusal names
// the object, the label and the command that removes it. Cascading Namespaces and CRDs are the
// webhook's (TestDeletionProtection* in test/e2e); without the CRD gate the policy refuses a
// Cascading CRD itself.
func TestDeletionProtectionPolicy(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	kube, err := kubernetes.NewForConfig(c.config)
	require.NoError(t, err)
	const ns = "dp"
	_, err = kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	gates := `featureGates=ResourcesDeletionProtection=true\,DeletionProtectionForCRDCascadingGate=true`
	installDeletionPolicy(t, kube, renderChartTemplate(t, "templates/deletion-protection.yaml", gates))

	objs := dpObjects(t, c, kube)
	deploy := objs[0]
	// The policy takes effect once the API server's policy informer has it.
	deploy.create(t, ns, "probe", "Always", 0)
	waitFor(t, "the policy to refuse an Always Deployment", func(ctx context.Context) (bool, error) {
		err := deploy.del(ns, "probe")
		if err == nil {
			deploy.create(t, ns, "probe", "Always", 0)
			return false, nil
		}
		return err != nil && strings.Contains(err.Error(), "kruise-deletion-protection"), nil
	})

	refused := func(t *testing.T, err error, wants ...string) {
		t.Helper()
		require.Error(t, err)
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		for _, w := range append(wants, "forbidden by ResourcesProtectionDeletion") {
			require.Contains(t, err.Error(), w)
		}
	}
	for _, o := range objs {
		t.Run(o.resource+" Always", func(t *testing.T) {
			name := "always-" + strings.ToLower(o.kind)
			o.create(t, ns, name, "Always", 0)
			full := name
			if o.fullName != nil {
				full = o.fullName(name)
			}
			target, cmd := o.kind+" "+full, "kubectl label "+o.resource+" "+full
			if o.namespaced {
				target, cmd = o.kind+" "+ns+"/"+name, cmd+" -n "+ns
			}
			refused(t, o.del(ns, name), target+" is labelled policy.kruise.io/delete-protection=Always",
				"remove the label to delete it: "+cmd+" policy.kruise.io/delete-protection-")
			require.NoError(t, o.unlabel(ns, name))
			require.NoError(t, o.del(ns, name), "admitted once the label is gone")
		})
		t.Run(o.resource+" other values are ignored", func(t *testing.T) {
			name := "never-" + strings.ToLower(o.kind)
			o.create(t, ns, name, "always", 3)
			require.NoError(t, o.del(ns, name))
		})
	}
	for _, o := range objs[:8] { // the workloads
		t.Run(o.resource+" Cascading", func(t *testing.T) {
			name := "cascading-" + strings.ToLower(o.kind)
			o.create(t, ns, name, "Cascading", 2)
			want := "still has 2 replica(s) (spec.replicas); scale it to 0 first"
			if strings.HasSuffix(o.kind, "DaemonSet") {
				want = "still runs on 2 node(s)"
			}
			refused(t, o.del(ns, name), o.kind+" "+ns+"/"+name+" is labelled policy.kruise.io/delete-protection=Cascading and "+want)
			empty := name + "-empty"
			o.create(t, ns, empty, "Cascading", 0)
			require.NoError(t, o.del(ns, empty), "no replicas left: admitted")
		})
	}
	for _, o := range objs[8:] {
		t.Run(o.resource+" Cascading is left to the webhook or ignored", func(t *testing.T) {
			name := "cascading-" + strings.ToLower(o.kind)
			o.create(t, ns, name, "Cascading", 0)
			require.NoError(t, o.del(ns, name))
		})
	}

	t.Run("an object already being deleted is admitted", func(t *testing.T) {
		d := workloadDeployment(ns, "finalized", "", 1)
		d.Finalizers = []string{"example.com/hold"}
		_, err := kube.AppsV1().Deployments(ns).Create(ctx(t), d, metav1.CreateOptions{})
		require.NoError(t, err)
		require.NoError(t, deploy.del(ns, "finalized"))
		_, err = kube.AppsV1().Deployments(ns).Patch(ctx(t), "finalized", types.MergePatchType, []byte(`{"metadata":{"labels":{"`+dpLabel+`":"Always"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		require.NoError(t, deploy.del(ns, "finalized"), "deleting again is no new deletion")
		_, err = kube.AppsV1().Deployments(ns).Patch(ctx(t), "finalized", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	})
	t.Run("kube-system is never judged", func(t *testing.T) {
		deploy.create(t, "kube-system", "kept", "Always", 1)
		require.NoError(t, deploy.del("kube-system", "kept"))
	})
	t.Run("deletecollection is judged per object", func(t *testing.T) {
		const other = "dp-collection"
		_, err := kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{})
		require.NoError(t, err)
		deploy.create(t, other, "in-collection", "Always", 0)
		err = kube.AppsV1().Deployments(other).DeleteCollection(ctx(t), metav1.DeleteOptions{}, metav1.ListOptions{})
		refused(t, err, "Deployment dp-collection/in-collection is labelled", "kubectl label deployments.apps in-collection -n dp-collection")
		_, err = kube.AppsV1().Deployments(other).Get(ctx(t), "in-collection", metav1.GetOptions{})
		require.NoError(t, err)
	})
	t.Run("without the CRD gate a Cascading CRD is refused", func(t *testing.T) {
		crds := objs[len(objs)-1]
		require.Equal(t, "CustomResourceDefinition", crds.kind)
		replaceDeletionPolicy(t, kube, renderChartTemplate(t, "templates/deletion-protection.yaml", `featureGates=ResourcesDeletionProtection=true`))
		// Each try with a new CRD: one whose deletion was admitted goes away in the background.
		try := 0
		waitFor(t, "the policy without the CRD gate", func(ctx context.Context) (bool, error) {
			try++
			name := fmt.Sprintf("gated%d", try)
			crds.create(t, "", name, "Cascading", 0)
			err := crds.del("", name)
			if err == nil {
				return false, nil
			}
			return strings.Contains(err.Error(), "which kruise cannot check without the feature gate DeletionProtectionForCRDCascadingGate"), nil
		})
	})
}

// dpObjects are the kinds the policy protects, the seven workloads first, the CRD last.
func dpObjects(t *testing.T, c *cluster, kube kubernetes.Interface) []dpObject {
	labels := func(value string) map[string]string { return map[string]string{dpLabel: value} }
	unlabel := []byte(`{"metadata":{"labels":{"` + dpLabel + `":null}}}`)
	// Background (no garbage collector runs here to finish a foreground deletion).
	bg := metav1.DeletePropagationBackground
	delOpts := metav1.DeleteOptions{PropagationPolicy: &bg}
	tmpl := gen.PodTemplate(gen.AddPodLabels(map[string]string{"app": "x"}), gen.AddPodContainer(corev1.Container{Name: "main", Image: "busybox"}))
	kc := c.kruise.AppsV1beta1()
	return []dpObject{
		{kind: "Deployment", resource: "deployments.apps", namespaced: true,
			create: func(t *testing.T, ns, name, value string, n int32) {
				_, err := kube.AppsV1().Deployments(ns).Create(ctx(t), workloadDeployment(ns, name, value, n), metav1.CreateOptions{})
				require.NoError(t, err)
			},
			del: func(ns, name string) error {
				return kube.AppsV1().Deployments(ns).Delete(context.Background(), name, delOpts)
			},
			unlabel: func(ns, name string) error {
				_, err := kube.AppsV1().Deployments(ns).Patch(context.Background(), name, types.MergePatchType, unlabel, metav1.PatchOptions{})
				return err
			}},
		{kind: "ReplicaSet", resource: "replicasets.apps", namespaced: true,
			create: func(t *testing.T, ns, name, value string, n int32) {
				d := workloadDeployment(ns, name, value, n)
				_, err := kube.AppsV1().ReplicaSets(ns).Create(ctx(t), &appsv1.ReplicaSet{ObjectMeta: d.ObjectMeta,
					Spec: appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template}}, metav1.CreateOptions{})
				require.NoError(t, err)
			},
			del: func(ns, name string) error {
				return kube.AppsV1().ReplicaSets(ns).Delete(context.Background(), name, delOpts)
			},
			unlabel: func(ns, name string) error {
				_, err := kube.AppsV1().ReplicaSets(ns).Patch(context.Background(), name, types.MergePatchType, unlabel, metav1.PatchOptions{})
				return err
			}},
		{kind: "StatefulSet", resource: "statefulsets.apps", namespaced: true,
			create: func(t *testing.T, ns, name, value string, n int32) {
				d := workloadDeployment(ns, name, value, n)
				_, err := kube.AppsV1().StatefulSets(ns).Create(ctx(t), &appsv1.StatefulSet{ObjectMeta: d.ObjectMeta,
					Spec: appsv1.StatefulSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template}}, metav1.CreateOptions{})
				require.NoError(t, err)
			},
			del: func(ns, name string) error {
				return kube.AppsV1().StatefulSets(ns).Delete(context.Background(), name, delOpts)
			},
			unlabel: func(ns, name string) error {
				_, err := kube.AppsV1().StatefulSets(ns).Patch(context.Background(), name, types.MergePatchType, unlabel, metav1.PatchOptions{})
				return err
			}},
		{kind: "CloneSet", resource: "clonesets.apps.kruise.io", namespaced: true,
			create: func(t *testing.T, ns, name, value string, n int32) {
				cs := gen.CloneSet(name, gen.SetCloneSetNamespace(ns), gen.SetCloneSetReplicas(n), gen.SetCloneSetSelector(map[string]string{"app": "x"}), gen.SetCloneSetTemplate(tmpl))
				cs.Labels = labels(value)
				_, err := kc.CloneSets(ns).Create(ctx(t), cs, metav1.CreateOptions{})
				require.NoError(t, err)
			},
			del: func(ns, name string) error { return kc.CloneSets(ns).Delete(context.Background(), name, delOpts) },
			unlabel: func(ns, name string) error {
				_, err := kc.CloneSets(ns).Patch(context.Background(), name, types.MergePatchType, unlabel, metav1.PatchOptions{})
				return err
			}},
		{kind: "UnitedDeployment", resource: "uniteddeployments.apps.kruise.io", namespaced: true,
			create: func(t *testing.T, ns, name, value string, n int32) {
				ud := &appsv1alpha1.UnitedDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels(value)},
					Spec: appsv1alpha1.UnitedDeploymentSpec{Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
						Template: appsv1alpha1.SubsetTemplate{CloneSetTemplate: &appsv1alpha1.CloneSetTemplateSpec{
							ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, Spec: appsv1alpha1.CloneSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}, Template: *tmpl}}},
						Topology: appsv1alpha1.Topology{Subsets: []appsv1alpha1.Subset{{Name: "a"}}}}}
				_, err := c.kruise.AppsV1alpha1().UnitedDeployments(ns).Create(ctx(t), ud, metav1.CreateOptions{})
				require.NoError(t, err)
			},
			del: func(ns, name string) error {
				return c.kruise.AppsV1alpha1().UnitedDeployments(ns).Delete(context.Background(), name, delOpts)
			},
			unlabel: func(ns, name string) error {
				_, err := c.kruise.AppsV1alpha1().UnitedDeployments(ns).Patch(context.Background(), name, types.MergePatchType, unlabel, metav1.PatchOptions{})
				return err
			}},
		{kind: "StatefulSet", resource: "statefulsets.apps.kruise.io", namespaced: true,
			create: func(t *testing.T, ns, name, value string, n int32) {
				s := gen.StatefulSet(name, gen.SetStatefulSetNamespace(ns), gen.SetStatefulSetReplicas(n), gen.SetStatefulSetSelector(map[string]string{"app": "x"}), gen.SetStatefulSetTemplate(tmpl))
				s.Labels = labels(value)
				_, err := kc.StatefulSets(ns).Create(ctx(t), s, metav1.CreateOptions{})
				require.NoError(t, err)
			},
			del: func(ns, name string) error { return kc.StatefulSets(ns).Delete(context.Background(), name, delOpts) },
			unlabel: func(ns, name string) error {
				_, err := kc.StatefulSets(ns).Patch(context.Background(), name, types.MergePatchType, unlabel, metav1.PatchOptions{})
				return err
			}},
		{kind: "DaemonSet", resource: "daemonsets.apps.kruise.io", namespaced: true,
			create: func(t *testing.T, ns, name, value string, n int32) {
				ds := gen.DaemonSet(name, gen.SetDaemonSetNamespace(ns), gen.SetDaemonSetSelector(map[string]string{"app": "x"}), gen.SetDaemonSetTemplate(tmpl))
				ds.Labels = labels(value)
				got, err := kc.DaemonSets(ns).Create(ctx(t), ds, metav1.CreateOptions{})
				require.NoError(t, err)
				// No controller runs: write the status a controller would.
				got.Status = appsv1beta1.DaemonSetStatus{DesiredNumberScheduled: n, CurrentNumberScheduled: n}
				_, err = kc.DaemonSets(ns).UpdateStatus(ctx(t), got, metav1.UpdateOptions{})
				require.NoError(t, err)
			},
			del: func(ns, name string) error { return kc.DaemonSets(ns).Delete(context.Background(), name, delOpts) },
			unlabel: func(ns, name string) error {
				_, err := kc.DaemonSets(ns).Patch(context.Background(), name, types.MergePatchType, unlabel, metav1.PatchOptions{})
				return err
			}},
		{kind: "DaemonSet", resource: "daemonsets.apps", namespaced: true,
			create: func(t *testing.T, ns, name, value string, n int32) {
				d := workloadDeployment(ns, name, value, 0)
				got, err := kube.AppsV1().DaemonSets(ns).Create(ctx(t), &appsv1.DaemonSet{ObjectMeta: d.ObjectMeta,
					Spec: appsv1.DaemonSetSpec{Selector: d.Spec.Selector, Template: d.Spec.Template}}, metav1.CreateOptions{})
				require.NoError(t, err)
				got.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: n, CurrentNumberScheduled: n}
				_, err = kube.AppsV1().DaemonSets(ns).UpdateStatus(ctx(t), got, metav1.UpdateOptions{})
				require.NoError(t, err)
			},
			del: func(ns, name string) error {
				return kube.AppsV1().DaemonSets(ns).Delete(context.Background(), name, delOpts)
			},
			unlabel: func(ns, name string) error {
				_, err := kube.AppsV1().DaemonSets(ns).Patch(context.Background(), name, types.MergePatchType, unlabel, metav1.PatchOptions{})
				return err
			}},
		{kind: "Service", resource: "services", namespaced: true,
			create: func(t *testing.T, ns, name, value string, _ int32) {
				_, err := kube.CoreV1().Services(ns).Create(ctx(t), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels(value)},
					Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
				require.NoError(t, err)
			},
			del: func(ns, name string) error {
				return kube.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
			},
			unlabel: func(ns, name string) error {
				_, err := kube.CoreV1().Services(ns).Patch(context.Background(), name, types.MergePatchType, unlabel, metav1.PatchOptions{})
				return err
			}},
		{kind: "Ingress", resource: "ingresses.networking.k8s.io", namespaced: true,
			create: func(t *testing.T, ns, name, value string, _ int32) {
				_, err := kube.NetworkingV1().Ingresses(ns).Create(ctx(t), &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels(value)},
					Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}, metav1.CreateOptions{})
				require.NoError(t, err)
			},
			del: func(ns, name string) error {
				return kube.NetworkingV1().Ingresses(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
			},
			unlabel: func(ns, name string) error {
				_, err := kube.NetworkingV1().Ingresses(ns).Patch(context.Background(), name, types.MergePatchType, unlabel, metav1.PatchOptions{})
				return err
			}},
		{kind: "Namespace", resource: "namespaces",
			create: func(t *testing.T, _, name, value string, _ int32) {
				_, err := kube.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels(value)}}, metav1.CreateOptions{})
				require.NoError(t, err)
			},
			del: func(_, name string) error {
				return kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
			},
			unlabel: func(_, name string) error {
				_, err := kube.CoreV1().Namespaces().Patch(context.Background(), name, types.MergePatchType, unlabel, metav1.PatchOptions{})
				return err
			}},
		{kind: "CustomResourceDefinition", resource: "customresourcedefinitions.apiextensions.k8s.io", fullName: dpCRDName,
			create: func(t *testing.T, _, name, value string, _ int32) {
				_, err := c.apiext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx(t), dpCRD(name, value), metav1.CreateOptions{})
				require.NoError(t, err)
			},
			del: func(_, name string) error {
				return c.apiext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), dpCRDName(name), metav1.DeleteOptions{})
			},
			unlabel: func(_, name string) error {
				_, err := c.apiext.ApiextensionsV1().CustomResourceDefinitions().Patch(context.Background(), dpCRDName(name), types.MergePatchType, unlabel, metav1.PatchOptions{})
				return err
			}},
	}
}

func workloadDeployment(ns, name, value string, n int32) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
			},
		},
	}
	if value != "" {
		d.Labels = map[string]string{dpLabel: value}
	}
	return d
}

func dpCRDName(name string) string {
	return strings.ReplaceAll(name, "-", "") + "s.dp.example.com"
}

func dpCRD(name, value string) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.TrimSuffix(dpCRDName(name), ".dp.example.com")
	singular := strings.TrimSuffix(plural, "s")
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: dpCRDName(name), Labels: map[string]string{dpLabel: value}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "dp.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: singular, Kind: "K" + singular},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
		},
	}
}

// installDeletionPolicy creates the policy and binding of file (other objects, the RBAC, are
// for kruise-controller, which does not run here).
func installDeletionPolicy(t *testing.T, kube kubernetes.Interface, file string) {
	t.Helper()
	policy, binding := decodeDeletionPolicy(t, file)
	_, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(context.Background(), policy, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(context.Background(), binding, metav1.CreateOptions{})
	require.NoError(t, err)
}

// replaceDeletionPolicy replaces the installed policy with file's.
func replaceDeletionPolicy(t *testing.T, kube kubernetes.Interface, file string) {
	t.Helper()
	policy, _ := decodeDeletionPolicy(t, file)
	old, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(context.Background(), policy.Name, metav1.GetOptions{})
	require.NoError(t, err)
	policy.ResourceVersion = old.ResourceVersion
	_, err = kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Update(context.Background(), policy, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func decodeDeletionPolicy(t *testing.T, file string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var policy *admissionregistrationv1.ValidatingAdmissionPolicy
	var binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, doc := range bytes.Split(raw, []byte("\n---")) {
		var meta metav1.TypeMeta
		require.NoError(t, utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096).Decode(&meta))
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			policy = &admissionregistrationv1.ValidatingAdmissionPolicy{}
			require.NoError(t, utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096).Decode(policy))
		case "ValidatingAdmissionPolicyBinding":
			binding = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			require.NoError(t, utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096).Decode(binding))
		}
	}
	require.NotNil(t, policy)
	require.NotNil(t, binding)
	return policy, binding
}
