//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/webhook/deletionprotection"
	"github.com/nodekruise/kruise/test/e2e/framework"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// The local cluster runs with ResourcesDeletionProtection and DeletionProtectionForCRDCascadingGate
// on (deploy/overlays/local): the policy kruise-deletion-protection refuses Always and the
// workloads' Cascading in the API server, the webhook vdeletionprotection.kb.io a Cascading
// Namespace that holds pods and a Cascading CRD whose objects remain. docs/deletion-protection.md.

var (
	dpSetLabel = func(value string) []byte {
		return []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, deletionprotection.Label, value))
	}
	dpUnlabel = []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, deletionprotection.Label))
)

// requireProtected checks that err is the refusal of a deletion protected with value.
func requireProtected(t *testing.T, err error, value string, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the deletion was admitted; want it refused (%s=%s)", deletionprotection.Label, value)
	}
	if !apierrors.IsForbidden(err) {
		t.Fatalf("want 403 Forbidden, got %v", err)
	}
	for _, w := range append(wants, deletionprotection.MessagePrefix, deletionprotection.Label+"="+value, deletionprotection.Label+"-") {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("refusal %q lacks %q", err.Error(), w)
		}
	}
}

// dpWorkload is one workload kind: create with replicas, patch (label, scale) and delete it.
type dpWorkload struct {
	create func(ctx context.Context, name string, replicas int32) error
	patch  func(ctx context.Context, name string, body []byte) error
	del    func(ctx context.Context, name string) error
}

func dpWorkloads(t *testing.T, f *framework.Framework, ns string) map[string]dpWorkload {
	kc := f.KruiseClient(t).AppsV1beta1()
	labels := map[string]string{"app": "dp"}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "main", Image: f.Image("public/busybox:1.35"), Command: []string{"sleep", "3600"}}}},
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
	return map[string]dpWorkload{
		"Deployment": {
			create: func(ctx context.Context, name string, n int32) error {
				_, err := f.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: meta(name),
					Spec: appsv1.DeploymentSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}, metav1.CreateOptions{})
				return err
			},
			patch: func(ctx context.Context, name string, body []byte) error {
				_, err := f.Client.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
				return err
			},
			del: func(ctx context.Context, name string) error {
				return f.Client.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{})
			},
		},
		"StatefulSet": {
			create: func(ctx context.Context, name string, n int32) error {
				_, err := f.Client.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: meta(name),
					Spec: appsv1.StatefulSetSpec{Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}, metav1.CreateOptions{})
				return err
			},
			patch: func(ctx context.Context, name string, body []byte) error {
				_, err := f.Client.AppsV1().StatefulSets(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
				return err
			},
			del: func(ctx context.Context, name string) error {
				return f.Client.AppsV1().StatefulSets(ns).Delete(ctx, name, metav1.DeleteOptions{})
			},
		},
		"CloneSet": {
			create: func(ctx context.Context, name string, n int32) error {
				cs := gen.CloneSet(name, gen.SetCloneSetNamespace(ns), gen.SetCloneSetReplicas(n), gen.SetCloneSetSelector(labels), gen.SetCloneSetTemplate(&tmpl))
				_, err := kc.CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{})
				return err
			},
			patch: func(ctx context.Context, name string, body []byte) error {
				_, err := kc.CloneSets(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
				return err
			},
			del: func(ctx context.Context, name string) error {
				return kc.CloneSets(ns).Delete(ctx, name, metav1.DeleteOptions{})
			},
		},
		"AdvancedStatefulSet": {
			create: func(ctx context.Context, name string, n int32) error {
				s := gen.StatefulSet(name, gen.SetStatefulSetNamespace(ns), gen.SetStatefulSetReplicas(n), gen.SetStatefulSetSelector(labels), gen.SetStatefulSetTemplate(&tmpl))
				_, err := kc.StatefulSets(ns).Create(ctx, s, metav1.CreateOptions{})
				return err
			},
			patch: func(ctx context.Context, name string, body []byte) error {
				_, err := kc.StatefulSets(ns).Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
				return err
			},
			del: func(ctx context.Context, name string) error {
				return kc.StatefulSets(ns).Delete(ctx, name, metav1.DeleteOptions{})
			},
		},
	}
}

// Each workload kind, Always and Cascading: Always refuses whatever the replicas; Cascading refuses
// while spec.replicas > 0 and admits at 0; without the label the deletion goes through.
func TestDeletionProtectionWorkloads(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 3*time.Minute)
	ns := f.NewNamespace(ctx, t, "delprot")
	for kind, w := range dpWorkloads(t, f, ns) {
		// The subtests run in turn, inside the parent's deadline: each is a few API calls (in
		// parallel they would wait for a slot among the package's tests while ctx runs out).
		t.Run(kind+"/Always", func(t *testing.T) {
			name := strings.ToLower(kind) + "-always"
			if err := w.create(ctx, name, 0); err != nil {
				t.Fatal(err)
			}
			if err := w.patch(ctx, name, dpSetLabel(deletionprotection.Always)); err != nil {
				t.Fatal(err)
			}
			// Never left labelled: the namespace's deletion would wait on it.
			t.Cleanup(func() { _ = w.patch(context.Background(), name, dpUnlabel) })
			requireProtected(t, w.del(ctx, name), deletionprotection.Always, ns+"/"+name)
			if err := w.patch(ctx, name, dpUnlabel); err != nil {
				t.Fatal(err)
			}
			if err := w.del(ctx, name); err != nil {
				t.Fatalf("deleting once the label is gone: %v", err)
			}
		})
		t.Run(kind+"/Cascading", func(t *testing.T) {
			name := strings.ToLower(kind) + "-cascading"
			if err := w.create(ctx, name, 2); err != nil {
				t.Fatal(err)
			}
			if err := w.patch(ctx, name, dpSetLabel(deletionprotection.Cascading)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = w.patch(context.Background(), name, dpUnlabel) })
			requireProtected(t, w.del(ctx, name), deletionprotection.Cascading, "still has 2 replica(s)")
			if err := w.patch(ctx, name, []byte(`{"spec":{"replicas":0}}`)); err != nil {
				t.Fatal(err)
			}
			if err := w.del(ctx, name); err != nil {
				t.Fatalf("deleting at 0 replicas: %v", err)
			}
		})
	}
}

// A Service labelled Always cannot be deleted; Cascading protects no Service (as in OpenKruise).
func TestDeletionProtectionService(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, time.Minute)
	ns := f.NewNamespace(ctx, t, "delprot-svc")
	svcs := f.Client.CoreV1().Services(ns)
	for _, value := range []string{deletionprotection.Always, deletionprotection.Cascading} {
		name := "web-" + strings.ToLower(value)
		_, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{deletionprotection.Label: value}},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = svcs.Patch(context.Background(), name, types.MergePatchType, dpUnlabel, metav1.PatchOptions{})
		})
	}
	requireProtected(t, svcs.Delete(ctx, "web-always", metav1.DeleteOptions{}), deletionprotection.Always, "Service "+ns+"/web-always")
	if err := svcs.Delete(ctx, "web-cascading", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("Cascading does not protect a Service: %v", err)
	}
}

// A Namespace labelled Always cannot be deleted, even empty (the policy).
func TestDeletionProtectionNamespaceAlways(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, time.Minute)
	ns := f.NewNamespace(ctx, t, "delprot-always")
	nss := f.Client.CoreV1().Namespaces()
	if _, err := nss.Patch(ctx, ns, types.MergePatchType, dpSetLabel(deletionprotection.Always), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = nss.Patch(context.Background(), ns, types.MergePatchType, dpUnlabel, metav1.PatchOptions{})
	})
	requireProtected(t, nss.Delete(ctx, ns, metav1.DeleteOptions{}), deletionprotection.Always, "Namespace "+ns, "kubectl label namespaces "+ns)
}

// A Namespace labelled Cascading cannot be deleted while a pod in it is active (the webhook); once
// the pod is gone it can.
func TestDeletionProtectionNamespaceCascading(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 2*time.Minute)
	f.WaitWebhookAnswers(ctx, t, time.Minute)
	ns := f.NewNamespace(ctx, t, "delprot-cascading")
	nss := f.Client.CoreV1().Namespaces()
	if _, err := nss.Patch(ctx, ns, types.MergePatchType, dpSetLabel(deletionprotection.Cascading), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = nss.Patch(context.Background(), ns, types.MergePatchType, dpUnlabel, metav1.PatchOptions{})
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "holder"}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{Name: "main", Image: f.Image("public/busybox:1.35"), Command: []string{"sleep", "3600"}}}}}
	if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	requireProtected(t, nss.Delete(ctx, ns, metav1.DeleteOptions{}), deletionprotection.Cascading, "vdeletionprotection.kb.io", "still holds 1 active pod")
	if err := f.Client.CoreV1().Pods(ns).Delete(ctx, "holder", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(ctx, t, time.Minute, "the pod gone", func(ctx context.Context) (bool, string, error) {
		_, err := f.Client.CoreV1().Pods(ns).Get(ctx, "holder", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		return false, "still there", err
	})
	if err := nss.Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the emptied namespace: %v", err)
	}
}

// A CRD labelled Cascading cannot be deleted while an object of it remains (the webhook, with
// DeletionProtectionForCRDCascadingGate); once the object is gone it can.
func TestDeletionProtectionCRDCascading(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 2*time.Minute)
	f.WaitWebhookAnswers(ctx, t, time.Minute)
	ns := f.NewNamespace(ctx, t, "delprot-crd")
	ac, err := apiextensionsclient.NewForConfig(f.Config)
	if err != nil {
		t.Fatal(err)
	}
	crds := ac.ApiextensionsV1().CustomResourceDefinitions()
	plural := "dp" + rand.String(6) + "s"
	group := "e2e.kruise.io"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group, Labels: map[string]string{deletionprotection.Label: deletionprotection.Cascading}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.TrimSuffix(plural, "s"), Kind: "DeletionCase" + strings.TrimSuffix(plural, "s")},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
		},
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = crds.Patch(ctx, crd.Name, types.MergePatchType, dpUnlabel, metav1.PatchOptions{})
		_ = crds.Delete(ctx, crd.Name, metav1.DeleteOptions{})
	})
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(group + "/v1")
	obj.SetKind(crd.Spec.Names.Kind)
	obj.SetName("one")
	dyn := f.Dynamic(t).Resource(gvr).Namespace(ns)
	framework.WaitFor(ctx, t, time.Minute, "the CRD served", func(ctx context.Context) (bool, string, error) {
		_, err := dyn.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return true, "object created", nil
	})
	requireProtected(t, crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}), deletionprotection.Cascading, "vdeletionprotection.kb.io", "1 object of it remain")
	if err := dyn.Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the CRD without objects: %v", err)
	}
}
