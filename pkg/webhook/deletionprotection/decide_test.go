package deletionprotection

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var deletedAt = metav1.Now()

func TestProtection(t *testing.T) {
	for _, tc := range []struct {
		name     string
		labels   map[string]string
		deleting bool
		want     string
	}{
		{name: "no label"},
		{name: "Always", labels: map[string]string{Label: Always}, want: Always},
		{name: "Cascading", labels: map[string]string{Label: Cascading}, want: Cascading},
		{name: "other values are ignored", labels: map[string]string{Label: "always"}},
		{name: "empty value is ignored", labels: map[string]string{Label: ""}},
		{name: "already deleting", labels: map[string]string{Label: Always}, deleting: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: tc.labels}}
			if tc.deleting {
				ns.DeletionTimestamp = &deletedAt
			}
			assert.Equal(t, tc.want, Protection(ns))
		})
	}
	assert.Empty(t, Protection(nil))
}

func TestCountNamespaceChildren(t *testing.T) {
	pod := func(phase corev1.PodPhase, deleting bool) corev1.Pod {
		p := corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			p.DeletionTimestamp = &deletedAt
		}
		return p
	}
	claim := func(phase corev1.PersistentVolumeClaimPhase, deleting bool) corev1.PersistentVolumeClaim {
		c := corev1.PersistentVolumeClaim{Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
		if deleting {
			c.DeletionTimestamp = &deletedAt
		}
		return c
	}
	got := CountNamespaceChildren(
		[]corev1.Pod{pod(corev1.PodRunning, false), pod(corev1.PodPending, false), pod("", false),
			pod(corev1.PodSucceeded, false), pod(corev1.PodFailed, false), pod(corev1.PodRunning, true)},
		[]corev1.PersistentVolumeClaim{claim(corev1.ClaimBound, false), claim(corev1.ClaimPending, false),
			claim(corev1.ClaimLost, false), claim(corev1.ClaimBound, true)})
	assert.Equal(t, NamespaceChildren{ActivePods: 3, BoundClaims: 1}, got)
}

func TestDecideNamespace(t *testing.T) {
	ns := Target{Kind: "Namespace", Resource: "namespaces", Name: "prod"}
	unlabel := "kubectl label namespaces prod policy.kruise.io/delete-protection-"
	for _, tc := range []struct {
		name       string
		protection string
		children   NamespaceChildren
		reason     string
		message    string
	}{
		{name: "unprotected", children: NamespaceChildren{ActivePods: 3}},
		{name: "Always, empty", protection: Always, reason: ReasonAlways,
			message: "forbidden by ResourcesProtectionDeletion: Namespace prod is labelled policy.kruise.io/delete-protection=Always; remove the label to delete it: " + unlabel},
		{name: "Cascading, empty", protection: Cascading},
		{name: "Cascading, a pod", protection: Cascading, children: NamespaceChildren{ActivePods: 1}, reason: ReasonNamespaceNotEmpty,
			message: "forbidden by ResourcesProtectionDeletion: Namespace prod is labelled policy.kruise.io/delete-protection=Cascading and still holds 1 active pod; delete those first, or remove the label: " + unlabel},
		{name: "Cascading, claims only", protection: Cascading, children: NamespaceChildren{BoundClaims: 2}, reason: ReasonNamespaceNotEmpty,
			message: "forbidden by ResourcesProtectionDeletion: Namespace prod is labelled policy.kruise.io/delete-protection=Cascading and still holds 2 Bound PersistentVolumeClaims; delete those first, or remove the label: " + unlabel},
		{name: "Cascading, both", protection: Cascading, children: NamespaceChildren{ActivePods: 4, BoundClaims: 1}, reason: ReasonNamespaceNotEmpty,
			message: "forbidden by ResourcesProtectionDeletion: Namespace prod is labelled policy.kruise.io/delete-protection=Cascading and still holds 4 active pods and 1 Bound PersistentVolumeClaim; delete those first, or remove the label: " + unlabel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideNamespace(ns, tc.protection, tc.children)
			assert.Equal(t, tc.reason != "", d.Refused)
			assert.Equal(t, tc.reason, d.Reason)
			assert.Equal(t, tc.message, d.Message)
		})
	}
}

func TestDecideCRD(t *testing.T) {
	crd := Target{Kind: "CustomResourceDefinition", Resource: "customresourcedefinitions.apiextensions.k8s.io", Name: "foos.example.com"}
	unlabel := "kubectl label customresourcedefinitions.apiextensions.k8s.io foos.example.com policy.kruise.io/delete-protection-"
	assert.Equal(t, Decision{}, DecideCRD(crd, "", 5))
	assert.Equal(t, Decision{}, DecideCRD(crd, Cascading, 0))
	assert.Equal(t, Decision{Refused: true, Reason: ReasonCRDHasObjects, Message: "forbidden by ResourcesProtectionDeletion: CustomResourceDefinition foos.example.com is labelled policy.kruise.io/delete-protection=Cascading and 2 objects of it remain; delete those first, or remove the label: " + unlabel},
		DecideCRD(crd, Cascading, 2))
	assert.Equal(t, ReasonAlways, DecideCRD(crd, Always, 0).Reason)

	assert.Equal(t, Decision{}, DecideCRDGateOff(crd, ""))
	assert.Equal(t, ReasonAlways, DecideCRDGateOff(crd, Always).Reason)
	off := DecideCRDGateOff(crd, Cascading)
	assert.True(t, off.Refused, "a Cascading CRD cannot be checked with the gate off: refused, as in OpenKruise")
	assert.Equal(t, ReasonCRDCascadingGateOff, off.Reason)
	assert.Contains(t, off.Message, "feature gate DeletionProtectionForCRDCascadingGate (it is not enabled)")
	assert.Contains(t, off.Message, unlabel)
}

func TestTargetInNamespace(t *testing.T) {
	tg := Target{Kind: "CloneSet", Resource: "clonesets.apps.kruise.io", Namespace: "default", Name: "web"}
	assert.Equal(t, "CloneSet default/web", tg.String())
	assert.Equal(t, "kubectl label clonesets.apps.kruise.io web -n default policy.kruise.io/delete-protection-", tg.unlabel())
}

func TestCountActive(t *testing.T) {
	objs := []metav1.PartialObjectMetadata{{}, {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deletedAt}}, {}}
	assert.Equal(t, 2, CountActive(objs))
	assert.Equal(t, 0, CountActive(nil))
}

func TestListVersion(t *testing.T) {
	v := func(name string, served, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage}
	}
	crd := func(vs ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: vs}}
	}
	assert.Equal(t, "v1", ListVersion(crd(v("v1alpha1", true, false), v("v1", true, true))), "the storage version")
	assert.Equal(t, "v1alpha1", ListVersion(crd(v("v1alpha1", true, false), v("v1", false, true))), "a served one when storage is not served")
	assert.Equal(t, "", ListVersion(crd(v("v1", false, true))), "none served")
}
