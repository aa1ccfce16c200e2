package validate

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

// The SidecarSet rules that read other objects (sidecarset_lookup.go,
// sidecarset_patchallow.go).

func TestSidecarSetWebhookConflicts(t *testing.T) {
	proxy := func(name string, mods ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
		return sidecarSetNamed(name, append([]func(*appsv1beta1.SidecarSet){func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.Containers[0].Name = "proxy"
		}}, mods...)...)
	}
	inNamespace := func(n string) func(*appsv1beta1.SidecarSet) {
		return func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{appsv1alpha1.NamespaceNameLabel: n}}
		}
	}
	canaryOf := func(base string) func(*appsv1beta1.SidecarSet) {
		return func(ss *appsv1beta1.SidecarSet) {
			ss.Annotations = map[string]string{appsv1beta1.SidecarSetCanaryAnnotation: "true", appsv1beta1.SidecarSetBaseAnnotation: base}
			ss.Spec.UpdateStrategy.Type = appsv1beta1.NotUpdateSidecarSetStrategyType
		}
	}
	tests := []struct {
		name     string
		stored   []runtime.Object
		old, new *appsv1beta1.SidecarSet
		reason   string
		message  []string
	}{
		{
			name: "the same container name", stored: []runtime.Object{proxy("mesh")}, new: proxy("mesh-v2"),
			reason:  ReasonSidecarSetConflict,
			message: []string{`spec.containers: Invalid value: "proxy": SidecarSets mesh-v2 and mesh may select the same pods and both inject a container named "proxy"`},
		},
		{name: "the same container name in other namespaces", stored: []runtime.Object{proxy("mesh", inNamespace("a"))}, new: proxy("mesh-v2", inNamespace("b"))},
		{
			name: "a volume of the same name with other contents", stored: []runtime.Object{logSidecarSet()},
			new: sidecarSetNamed("audit", func(ss *appsv1beta1.SidecarSet) {
				ss.Spec.Volumes = append(ss.Spec.Volumes, corev1.Volume{Name: "log-data", VolumeSource: corev1.VolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}})
			}),
			reason:  ReasonSidecarSetConflict,
			message: []string{`spec.volumes: Invalid value: "log-data": SidecarSets audit and log may select the same pods and both add a volume named "log-data"`},
		},
		{
			name: "an update that brings a conflict", stored: []runtime.Object{proxy("mesh"), logSidecarSet()},
			old: logSidecarSet(), new: logSidecarSet(agent(func(c *appsv1beta1.SidecarContainer) { c.Name = "proxy" })),
			reason: ReasonSidecarSetConflict, message: []string{`SidecarSets log and mesh`},
		},
		{
			name: "an update of a SidecarSet whose conflict it had already", stored: []runtime.Object{proxy("mesh"), proxy("mesh-v2")},
			old: proxy("mesh-v2"), new: proxy("mesh-v2", agent(func(c *appsv1beta1.SidecarContainer) { c.Image = "agent:2" })),
		},
		{name: "a canary shares its base's names", stored: []runtime.Object{proxy("mesh")}, new: proxy("mesh-canary", canaryOf("mesh"))},
		{
			name: "a canary of a missing base, upgrading pods", new: proxy("mesh-canary", canaryOf("mesh"), func(ss *appsv1beta1.SidecarSet) {
				ss.Spec.UpdateStrategy.Type = appsv1beta1.RollingUpdateSidecarSetStrategyType
			}),
			reason: ReasonInvalidCanary,
			message: []string{`spec.updateStrategy.type: Invalid value: "RollingUpdate": a canary SidecarSet only injects`,
				`metadata.annotations[apps.kruise.io/sidecarset-base]: Not found: "mesh"`},
		},
		{
			name: "a canary of a canary", stored: []runtime.Object{proxy("mesh"), proxy("mesh-canary", canaryOf("mesh"))},
			new:    proxy("mesh-canary-2", canaryOf("mesh-canary")),
			reason: ReasonInvalidCanary, message: []string{`the base of a canary SidecarSet cannot be a canary itself`},
		},
		{
			name:   "a revision that does not exist",
			stored: []runtime.Object{revisionOf("log", "log-abc", "v1")},
			new: logSidecarSet(func(ss *appsv1beta1.SidecarSet) {
				ss.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{RevisionName: ptr.To("log-xyz")}
			}),
			reason:  ReasonRevisionNotFound,
			message: []string{`spec.injectionStrategy.revision.revisionName: Invalid value: "log-xyz": names no ControllerRevision of SidecarSet log`},
		},
		{
			name: "a revision named by its custom version", stored: []runtime.Object{revisionOf("log", "log-abc", "v1")},
			new: logSidecarSet(func(ss *appsv1beta1.SidecarSet) {
				ss.Spec.InjectionStrategy.Revision = &appsv1beta1.SidecarSetInjectRevision{CustomVersion: ptr.To("v1")}
			}),
		},
	}
	for _, tt := range tests {
		for _, version := range versions {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				serveSidecarSets(t, tt.stored...).judged(t, sidecarSetRequest(t, version, tt.new, tt.old), tt.reason, tt.message...)
			})
		}
	}
}

// revisionOf is a ControllerRevision of SidecarSet owner in kruise's
// namespace, at customVersion.
func revisionOf(owner, name, customVersion string) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: kruiseNamespace, Labels: map[string]string{
		sidecarrules.NameLabel: owner, appsv1beta1.SidecarSetCustomVersionLabel: customVersion}}}
}

func TestSidecarSetWebhookAdmitsWhenItCannotList(t *testing.T) {
	kruise := kruisefake.NewSimpleClientset()
	kruise.PrependReactor("list", "sidecarsets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is away")
	})
	s := serve(t, SidecarSetWebhook(kruise.AppsV1beta1(), kubefake.NewClientset().AppsV1(), kruiseNamespace, nil, nil))
	resp := s.send(t, sidecarSetRequest(t, "v1beta1", logSidecarSet(), nil))
	require.True(t, resp.Allowed, "refused for its own failure: %v", resp.Result)
	require.Len(t, resp.Warnings, 1)
	assert.Contains(t, resp.Warnings[0], "etcd is away")
}

// prefixAllowList is a PatchAllowCheck reading the allow-list as one key
// prefix: none allows nothing.
func prefixAllowList(ss *appsv1beta1.SidecarSet, raw string) error {
	if raw == "" {
		return errors.New("no allow-list")
	}
	for _, p := range ss.Spec.PatchPodMetadata {
		for k := range p.Annotations {
			if !strings.HasPrefix(k, raw) {
				return fmt.Errorf("annotation %s is not allowed", k)
			}
		}
	}
	return nil
}

func TestSidecarSetWebhookPatchAllowList(t *testing.T) {
	patching := func(key string) func(*appsv1beta1.SidecarSet) {
		return func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{key: "v"},
				PatchPolicy: appsv1beta1.SidecarSetOverwritePatchPolicy}}
		}
	}
	allowing := func(prefix string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kruise-configuration", Namespace: kruiseNamespace},
			Data: map[string]string{"SidecarSet_PatchPodMetadata_WhiteList": prefix}}
	}
	tests := []struct {
		name     string
		config   []runtime.Object
		old, new *appsv1beta1.SidecarSet
		reason   string
		message  []string
	}{
		{name: "nothing patched, no allow-list", new: logSidecarSet()},
		{
			name: "no allow-list", new: logSidecarSet(patching("mesh.io/inject")), reason: ReasonPatchNotAllowed,
			message: []string{`spec.patchPodMetadata: Forbidden: no allow-list (ConfigMap kruise-system/kruise-configuration, key SidecarSet_PatchPodMetadata_WhiteList)`},
		},
		{name: "allowed", config: []runtime.Object{allowing("mesh.io/")}, new: logSidecarSet(patching("mesh.io/inject"))},
		{
			name: "a key not allowed", config: []runtime.Object{allowing("mesh.io/")}, new: logSidecarSet(patching("other.io/x")),
			reason: ReasonPatchNotAllowed, message: []string{`annotation other.io/x is not allowed`},
		},
		{
			name: "an update leaving patchPodMetadata as stored", old: logSidecarSet(patching("other.io/x")),
			new: logSidecarSet(patching("other.io/x"), agent(func(c *appsv1beta1.SidecarContainer) { c.Image = "agent:2" })),
		},
	}
	for _, tt := range tests {
		for _, version := range versions {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				s := serve(t, SidecarSetWebhook(kruisefake.NewSimpleClientset().AppsV1beta1(), kubefake.NewClientset().AppsV1(), kruiseNamespace,
					&PatchAllowList{ConfigMaps: kubefake.NewClientset(tt.config...).CoreV1(), Check: prefixAllowList}, nil))
				s.judged(t, sidecarSetRequest(t, version, tt.new, tt.old), tt.reason, tt.message...)
			})
		}
	}
}

func TestSidecarSetWebhookAdmitsWhenItCannotReadTheAllowList(t *testing.T) {
	kube := kubefake.NewClientset()
	kube.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden here")
	})
	s := serve(t, SidecarSetWebhook(kruisefake.NewSimpleClientset().AppsV1beta1(), kube.AppsV1(), kruiseNamespace,
		&PatchAllowList{ConfigMaps: kube.CoreV1(), Check: prefixAllowList}, nil))
	ss := logSidecarSet(func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.PatchPodMetadata = []appsv1beta1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"a.io/x": "v"}}}
	})
	resp := s.send(t, sidecarSetRequest(t, "v1beta1", ss, nil))
	require.True(t, resp.Allowed, "refused for its own failure: %v", resp.Result)
	require.Len(t, resp.Warnings, 1)
	assert.Contains(t, resp.Warnings[0], "forbidden here")
}
