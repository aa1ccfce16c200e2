package spread

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func obj(apiVersion, kind string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "app", "namespace": "ns", "uid": "u1"},
		"spec":     spec,
	}}
}

func TestWorkloadOf(t *testing.T) {
	template := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "x"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}},
	}
	selector := map[string]any{"matchLabels": map[string]any{"app": "x"}}
	for _, tc := range []struct {
		name     string
		obj      *unstructured.Unstructured
		filter   *appsv1alpha1.TargetFilter
		replicas int32
		matches  map[string]string
		misses   map[string]string
		err      string
	}{
		{name: "Deployment replicas and selector", obj: obj("apps/v1", "Deployment", map[string]any{"replicas": int64(5), "selector": selector, "template": template}),
			replicas: 5, matches: map[string]string{"app": "x"}, misses: map[string]string{"app": "y"}},
		{name: "Job parallelism", obj: obj("batch/v1", "Job", map[string]any{"parallelism": int64(3), "completions": int64(9), "template": template}), replicas: 3},
		{name: "no replicas counts one", obj: obj("example.com/v1", "Thing", map[string]any{"template": template}), replicas: 1},
		{name: "replicasPathList summed, list indexes", obj: obj("kubeflow.org/v1", "TFJob", map[string]any{"roles": []any{
			map[string]any{"replicas": int64(2)}, map[string]any{"replicas": int64(4)}}}),
			filter: &appsv1alpha1.TargetFilter{ReplicasPathList: []string{"spec.roles.0.replicas", "spec.roles.1.replicas", "spec.absent"}}, replicas: 6},
		{name: "filter selector ANDed", obj: obj("apps/v1", "Deployment", map[string]any{"replicas": int64(1), "selector": selector}),
			filter:  &appsv1alpha1.TargetFilter{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}}},
			matches: map[string]string{"app": "x", "role": "worker"}, misses: map[string]string{"app": "x"}, replicas: 1},
		{name: "replicas not a number", obj: obj("apps/v1", "Deployment", map[string]any{"replicas": "many"}), err: "spec.replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := WorkloadOf(tc.obj, tc.filter)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.replicas, w.Replicas)
			assert.Equal(t, "app", w.Ref.Name)
			assert.Equal(t, tc.obj.GetKind(), w.Ref.Kind)
			assert.EqualValues(t, "u1", w.UID)
			if tc.matches != nil {
				assert.True(t, w.Selector.Matches(labels.Set(tc.matches)))
			}
			if tc.misses != nil {
				assert.False(t, w.Selector.Matches(labels.Set(tc.misses)))
			}
			if _, ok := tc.obj.Object["spec"].(map[string]any)["template"]; ok {
				require.NotNil(t, w.Template)
				assert.Equal(t, "x", w.Template.Labels["app"])
				assert.Equal(t, "i", w.Template.Spec.Containers[0].Image)
			} else {
				assert.Nil(t, w.Template)
			}
		})
	}
}

func TestOwnerRefAndRefersTo(t *testing.T) {
	owned := func(apiVersion, kind, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "not-controller"},
			{APIVersion: apiVersion, Kind: kind, Name: name, Controller: ptr.To(true)},
		}}}
	}
	deployOf := func(ns, name string) *metav1.OwnerReference {
		if ns == "ns" && name == "web-abc" {
			return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Controller: ptr.To(true)}
		}
		return nil
	}
	assert.Nil(t, OwnerRef(&corev1.Pod{}, deployOf))
	assert.Equal(t, &appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, OwnerRef(owned("apps/v1", "ReplicaSet", "web-abc"), deployOf))
	assert.Equal(t, &appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "solo"}, OwnerRef(owned("apps/v1", "ReplicaSet", "solo"), deployOf))
	assert.Equal(t, &appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc"}, OwnerRef(owned("apps/v1", "ReplicaSet", "web-abc"), nil))
	assert.Equal(t, &appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "cs"}, OwnerRef(owned("apps.kruise.io/v1alpha1", "CloneSet", "cs"), deployOf))

	ws := wsFor("apps.kruise.io/v1beta1", "CloneSet")
	assert.True(t, RefersTo(ws, appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "app"}), "version ignored")
	assert.False(t, RefersTo(ws, appsv1alpha1.TargetReference{APIVersion: "other.io/v1alpha1", Kind: "CloneSet", Name: "app"}), "group compared")
	assert.False(t, RefersTo(ws, appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "StatefulSet", Name: "app"}))
	assert.False(t, RefersTo(ws, appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "other"}))
	assert.False(t, RefersTo(&appsv1alpha1.WorkloadSpread{}, appsv1alpha1.TargetReference{Kind: "CloneSet", Name: "app"}))
}

func TestPodVersionAndMatched(t *testing.T) {
	pod := podNamed("p", map[string]string{"pod-template-hash": "h1", "controller-revision-hash": "app-h2"})
	assert.Equal(t, "h1", PodVersion(pod, appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment"}))
	assert.Equal(t, "h1", PodVersion(pod, appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "ReplicaSet"}))
	assert.Equal(t, "h2", PodVersion(pod, appsv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet"}))
	assert.Equal(t, VersionIgnored, PodVersion(pod, appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet"}))
	assert.Equal(t, VersionIgnored, PodVersion(podNamed("p", nil), appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment"}))

	_, ok := Matched(pod)
	assert.False(t, ok)
	require.NoError(t, SetMatched(pod, appsv1alpha1.InjectWorkloadSpread{Name: "ws", Subset: "a", UID: "k"}))
	assert.Equal(t, `{"name":"ws","subset":"a","uid":"k"}`, pod.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation])
	m, ok := Matched(pod)
	require.True(t, ok)
	assert.Equal(t, &appsv1alpha1.InjectWorkloadSpread{Name: "ws", Subset: "a", UID: "k"}, m)
	pod.Annotations[appsv1alpha1.MatchedWorkloadSpreadAnnotation] = "{bad"
	_, ok = Matched(pod)
	assert.False(t, ok)
}
