package podbudget

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// fakeOwners knows the controllers of the ReplicaSets by name.
type fakeOwners map[string]*metav1.OwnerReference

func (f fakeOwners) ControllerOf(_ context.Context, namespace string, ref metav1.OwnerReference) (*metav1.OwnerReference, error) {
	if namespace != ns {
		return nil, errors.New("wrong namespace")
	}
	if ref.Name == "broken" {
		return nil, errors.New("cache broken")
	}
	return f[ref.Kind+"/"+ref.Name], nil
}

var owners = fakeOwners{
	"ReplicaSet/web-abc":    controllerRef("apps/v1", "Deployment", "web"),
	"ReplicaSet/canary-abc": controllerRef("argoproj.io/v1alpha1", "Rollout", "canary"),
}

func TestWorkloadOf(t *testing.T) {
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want Workload
		err  string
	}{
		"bare pod":                {pod: readyPod("p"), want: Workload{APIVersion: "v1", Kind: "Pod", Name: "p"}},
		"Deployment's":            {pod: readyPod("p", ownedBy("apps/v1", "ReplicaSet", "web-abc")), want: Workload{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
		"Rollout's (#2571)":       {pod: readyPod("p", ownedBy("apps/v1", "ReplicaSet", "canary-abc")), want: Workload{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "canary"}},
		"a ReplicaSet of its own": {pod: readyPod("p", ownedBy("apps/v1", "ReplicaSet", "solo")), want: Workload{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "solo"}},
		"CloneSet's":              {pod: readyPod("p", ownedBy("apps.kruise.io/v1beta1", "CloneSet", "cs")), want: Workload{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet", Name: "cs"}},
		"cache error":             {pod: readyPod("p", ownedBy("apps/v1", "ReplicaSet", "broken")), err: "cache broken"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := WorkloadOf(context.Background(), owners, tc.pod)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCovers(t *testing.T) {
	bySelector := gen.PUB("b", gen.SetPUBNamespace(ns), gen.SetPUBSelector(map[string]string{"app": "web"}))
	target := func(apiVersion, kind, name string) *policyv1alpha1.PodUnavailableBudget {
		return gen.PUB("b", gen.SetPUBNamespace(ns), gen.SetPUBTarget(apiVersion, kind, name))
	}
	for name, tc := range map[string]struct {
		b    *policyv1alpha1.PodUnavailableBudget
		pod  *corev1.Pod
		want bool
		err  string
	}{
		"selector matches":            {b: bySelector, pod: readyPod("p"), want: true},
		"selector does not":           {b: bySelector, pod: readyPod("p", gen.AddPodLabels(map[string]string{"app": "db"}))},
		"other namespace":             {b: bySelector, pod: readyPod("p", gen.SetPodNamespace("other"))},
		"empty selector matches none": {b: gen.PUB("b", gen.SetPUBNamespace(ns), gen.SetPUBSelector(nil)), pod: readyPod("p")},
		"related-pub is only a hint":  {b: target("apps/v1", "Deployment", "web"), pod: readyPod("p", gen.AddPodAnnotations(map[string]string{policyv1alpha1.PodRelatedPubAnnotation: "b"}))},
		"Deployment through its RS":   {b: target("apps/v1", "Deployment", "web"), pod: readyPod("p", ownedBy("apps/v1", "ReplicaSet", "web-abc")), want: true},
		"other Deployment":            {b: target("apps/v1", "Deployment", "api"), pod: readyPod("p", ownedBy("apps/v1", "ReplicaSet", "web-abc"))},
		"the ReplicaSet itself":       {b: target("apps/v1", "ReplicaSet", "web-abc"), pod: readyPod("p", ownedBy("apps/v1", "ReplicaSet", "web-abc")), want: true},
		"Rollout through its RS":      {b: target("argoproj.io/v1alpha1", "Rollout", "canary"), pod: readyPod("p", ownedBy("apps/v1", "ReplicaSet", "canary-abc")), want: true},
		"CloneSet of another version": {b: target("apps.kruise.io/v1alpha1", "CloneSet", "cs"), pod: readyPod("p", ownedBy("apps.kruise.io/v1beta1", "CloneSet", "cs")), want: true},
		"same kind, other group":      {b: target("apps/v1", "StatefulSet", "db"), pod: readyPod("p", ownedBy("apps.kruise.io/v1beta1", "StatefulSet", "db"))},
		"Advanced StatefulSet":        {b: target("apps.kruise.io/v1beta1", "StatefulSet", "db"), pod: readyPod("p", ownedBy("apps.kruise.io/v1beta1", "StatefulSet", "db")), want: true},
		"ReplicationController":       {b: target("v1", "ReplicationController", "rc"), pod: readyPod("p", ownedBy("v1", "ReplicationController", "rc")), want: true},
		"bare pod":                    {b: target("apps/v1", "Deployment", "web"), pod: readyPod("p")},
		"owner read fails":            {b: target("apps/v1", "Deployment", "web"), pod: readyPod("p", ownedBy("apps/v1", "ReplicaSet", "broken")), err: "cache broken"},
		"deleting budget covers none": {b: gen.PUBFrom(bySelector, func(b *policyv1alpha1.PodUnavailableBudget) { b.DeletionTimestamp = &metav1.Time{Time: t0} }), pod: readyPod("p")},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Covers(context.Background(), owners, tc.b, tc.pod)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
