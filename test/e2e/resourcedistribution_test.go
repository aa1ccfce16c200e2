//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// rdSecret is the Secret a test distributes, as spec.resource's JSON.
func rdSecret(name, value string) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q},"stringData":{"token":%q}}`, name, value))
}

func createRD(ctx context.Context, t *testing.T, kc versioned.Interface, rd *appsv1alpha1.ResourceDistribution) {
	t.Helper()
	if _, err := kc.AppsV1alpha1().ResourceDistributions().Create(ctx, rd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ResourceDistribution %s: %v", rd.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := kc.AppsV1alpha1().ResourceDistributions().Delete(ctx, rd.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting ResourceDistribution %s: %v", rd.Name, err)
		}
	})
}

// patchResource replaces spec.resource (a merge patch: the controller writes the status meanwhile).
func patchResource(ctx context.Context, kc versioned.Interface, name string, resource []byte) error {
	patch := fmt.Sprintf(`{"spec":{"resource":%s}}`, resource)
	_, err := kc.AppsV1alpha1().ResourceDistributions().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

func (s rdScene) labelNamespace(ctx context.Context, t *testing.T, ns string, on bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"yes"}}}`, s.label)
	if !on {
		patch = fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, s.label)
	}
	if _, err := s.f.Client.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling namespace %s: %v", ns, err)
	}
}

type rdScene struct {
	f      *framework.Framework
	kc     versioned.Interface
	label  string
	rdName string
	secret string
}

// waitCopy waits until ns holds the copy with token value ("" : until it holds none).
func (s rdScene) waitCopy(ctx context.Context, t *testing.T, ns, value string) {
	t.Helper()
	desc := fmt.Sprintf("Secret %s/%s with token %q", ns, s.secret, value)
	if value == "" {
		desc = fmt.Sprintf("no Secret %s/%s", ns, s.secret)
	}
	framework.WaitFor(ctx, t, time.Minute, desc, func(ctx context.Context) (bool, string, error) {
		sec, err := s.f.Client.CoreV1().Secrets(ns).Get(ctx, s.secret, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return value == "", "absent", nil
		}
		if err != nil {
			return false, "", err
		}
		if sec.DeletionTimestamp != nil {
			return false, "being deleted", nil
		}
		got := string(sec.Data["token"])
		owned := metav1.IsControlledBy(sec, &metav1.ObjectMeta{UID: s.uid(ctx, t)})
		return value != "" && got == value && owned && sec.Annotations[appsv1alpha1.ResourceDistributionSourceAnnotation] == s.rdName,
			fmt.Sprintf("token %q, owned %v, annotations %v", got, owned, sec.Annotations), nil
	})
}

func (s rdScene) uid(ctx context.Context, t *testing.T) types.UID {
	rd, err := s.kc.AppsV1alpha1().ResourceDistributions().Get(ctx, s.rdName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading ResourceDistribution %s: %v", s.rdName, err)
	}
	return rd.UID
}

// waitStatus waits until the status counts desired/succeeded and ConflictOccurred lists conflicts.
func (s rdScene) waitStatus(ctx context.Context, t *testing.T, desired, succeeded int32, conflicts ...string) {
	t.Helper()
	framework.WaitFor(ctx, t, time.Minute, fmt.Sprintf("status %d/%d, conflicts %v", succeeded, desired, conflicts), func(ctx context.Context) (bool, string, error) {
		rd, err := s.kc.AppsV1alpha1().ResourceDistributions().Get(ctx, s.rdName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st := rd.Status
		var types []string
		var got []string
		for _, c := range st.Conditions {
			types = append(types, string(c.Type))
			if c.Type == appsv1alpha1.ResourceDistributionConflictOccurred {
				got = c.FailedNamespaces
			}
		}
		want := []string{"GetResourceFailed", "CreateResourceFailed", "UpdateResourceFailed", "DeleteResourceFailed", "ConflictOccurred", "NamespaceNotExists"}
		return st.ObservedGeneration == rd.Generation && st.Desired == desired && st.Succeeded == succeeded && st.Failed == desired-succeeded &&
				slices.Equal(types, want) && slices.Equal(got, conflicts),
			fmt.Sprintf("generation %d observed %d, %d/%d, failed %d, conditions %v, conflicts %v", rd.Generation, st.ObservedGeneration,
				st.Succeeded, st.Desired, st.Failed, types, got), nil
	})
}

// A Secret distributed to labelled namespaces follows them: a namespace labelled later gets it,
// one unlabelled loses it, an edited copy is reverted, a source change reaches every copy, and an
// object of the same name that the distribution does not own is reported and left alone.
func TestResourceDistribution(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 5*time.Minute)
	suffix := rand.String(5)
	s := rdScene{f: f, kc: f.KruiseClient(t), label: "e2e.kruise.io/rd-" + suffix, rdName: "e2e-rd-" + suffix, secret: "e2e-rd-token"}
	a, b, late, theirs := f.NewNamespace(ctx, t, "rd-a"), f.NewNamespace(ctx, t, "rd-b"), f.NewNamespace(ctx, t, "rd-late"), f.NewNamespace(ctx, t, "rd-theirs")
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.secret, Namespace: theirs}, StringData: map[string]string{"token": "not-yours"}}
	if _, err := f.Client.CoreV1().Secrets(theirs).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{a, b, theirs} {
		s.labelNamespace(ctx, t, ns, true)
	}
	createRD(ctx, t, s.kc, &appsv1alpha1.ResourceDistribution{
		ObjectMeta: metav1.ObjectMeta{Name: s.rdName},
		Spec: appsv1alpha1.ResourceDistributionSpec{
			Resource: runtime.RawExtension{Raw: rdSecret(s.secret, "v1")},
			Targets: appsv1alpha1.ResourceDistributionTargets{
				NamespaceLabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{s.label: "yes"}}},
		},
	})
	s.waitCopy(ctx, t, a, "v1")
	s.waitCopy(ctx, t, b, "v1")
	s.waitStatus(ctx, t, 3, 2, theirs)
	got, err := f.Client.CoreV1().Secrets(theirs).Get(ctx, s.secret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Data["token"]) != "not-yours" || len(got.OwnerReferences) != 0 {
		t.Fatalf("the unowned Secret in %s was changed: data %q, owners %v", theirs, got.Data["token"], got.OwnerReferences)
	}

	t.Run("a namespace labelled later gets it", func(t *testing.T) {
		s.labelNamespace(ctx, t, late, true)
		s.waitCopy(ctx, t, late, "v1")
		s.waitStatus(ctx, t, 4, 3, theirs)
	})
	t.Run("an unlabelled namespace loses it", func(t *testing.T) {
		s.labelNamespace(ctx, t, b, false)
		s.waitCopy(ctx, t, b, "")
		s.waitStatus(ctx, t, 3, 2, theirs)
	})
	t.Run("an edited copy is reverted", func(t *testing.T) {
		patch := []byte(`{"stringData":{"token":"tampered"}}`)
		if _, err := f.Client.CoreV1().Secrets(a).Patch(ctx, s.secret, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		s.waitCopy(ctx, t, a, "v1")
	})
	t.Run("a source change reaches every copy", func(t *testing.T) {
		if err := patchResource(ctx, s.kc, s.rdName, rdSecret(s.secret, "v2")); err != nil {
			t.Fatal(err)
		}
		s.waitCopy(ctx, t, a, "v2")
		s.waitCopy(ctx, t, late, "v2")
		s.waitStatus(ctx, t, 3, 2, theirs)
	})
}

// What the validating webhook refuses: a name both included and excluded, a kind other than
// Secret or ConfigMap, and a renamed resource.
func TestResourceDistributionAdmission(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, time.Minute)
	name := "e2e-rd-adm-" + rand.String(5)
	both := appsv1alpha1.ResourceDistributionTargetNamespaces{List: []appsv1alpha1.ResourceDistributionNamespace{{Name: "x"}}}
	for desc, rd := range map[string]*appsv1alpha1.ResourceDistribution{
		"ambiguous targets": {ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1alpha1.ResourceDistributionSpec{
			Resource: runtime.RawExtension{Raw: rdSecret("s", "v")},
			Targets:  appsv1alpha1.ResourceDistributionTargets{IncludedNamespaces: both, ExcludedNamespaces: both}}},
		"spec.resource.kind": {ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1alpha1.ResourceDistributionSpec{
			Resource: runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}`)}}},
	} {
		_, err := kc.AppsV1alpha1().ResourceDistributions().Create(ctx, rd, metav1.CreateOptions{})
		if err == nil {
			_ = kc.AppsV1alpha1().ResourceDistributions().Delete(ctx, name, metav1.DeleteOptions{})
			t.Fatalf("%s: created; want refused", desc)
		}
		if !strings.Contains(err.Error(), desc) {
			t.Errorf("%s: refused with %v; want a message naming %q", desc, err, desc)
		}
	}
	createRD(ctx, t, kc, &appsv1alpha1.ResourceDistribution{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.ResourceDistributionSpec{Resource: runtime.RawExtension{Raw: rdSecret("s", "v")},
			Targets: appsv1alpha1.ResourceDistributionTargets{IncludedNamespaces: both}}})
	if err := patchResource(ctx, kc, name, rdSecret("renamed", "v")); err == nil || !strings.Contains(err.Error(), "immutable") {
		t.Fatalf("renaming the resource: %v; want refused as immutable", err)
	}
}

// docs/examples/resourcedistribution.yaml as written: a namespace carrying its label gets the
// pull secret, with the type and data the example gives.
func TestResourceDistributionExample(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 2*time.Minute)
	var rd *appsv1alpha1.ResourceDistribution
	for _, obj := range exampleObjects(t, "../../docs/examples/resourcedistribution.yaml") {
		if o, ok := obj.(*appsv1alpha1.ResourceDistribution); ok {
			rd = o
		}
	}
	if rd == nil {
		t.Fatal("docs/examples/resourcedistribution.yaml has no ResourceDistribution")
	}
	ns := f.NewNamespace(ctx, t, "rd-example")
	for k, v := range rd.Spec.Targets.NamespaceLabelSelector.MatchLabels {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, k, v)
		if _, err := f.Client.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createRD(ctx, t, kc, rd)
	framework.WaitFor(ctx, t, time.Minute, "the example's pull secret in "+ns, func(ctx context.Context) (bool, string, error) {
		sec, err := f.Client.CoreV1().Secrets(ns).Get(ctx, "shared-pull-secret", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "absent", nil
		}
		if err != nil {
			return false, "", err
		}
		return sec.Type == corev1.SecretTypeDockerConfigJson && strings.Contains(string(sec.Data[".dockerconfigjson"]), "registry.example.com"),
			fmt.Sprintf("type %s", sec.Type), nil
	})
}
