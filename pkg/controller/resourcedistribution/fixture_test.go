package resourcedistribution

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

const secretJSON = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds","labels":{"team":"a"}},"type":"Opaque","data":{"k":"dg=="}}`

func rdWith(raw string, targets appsv1alpha1.ResourceDistributionTargets) *appsv1alpha1.ResourceDistribution {
	return &appsv1alpha1.ResourceDistribution{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "ResourceDistribution"},
		ObjectMeta: metav1.ObjectMeta{Name: "dist", UID: "rd-uid", Generation: 3},
		Spec:       appsv1alpha1.ResourceDistributionSpec{Resource: runtime.RawExtension{Raw: []byte(raw)}, Targets: targets},
	}
}

func included(names ...string) appsv1alpha1.ResourceDistributionTargetNamespaces {
	var l appsv1alpha1.ResourceDistributionTargetNamespaces
	for _, n := range names {
		l.List = append(l.List, appsv1alpha1.ResourceDistributionNamespace{Name: n})
	}
	return l
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func mustSource(t *testing.T, rd *appsv1alpha1.ResourceDistribution) *Source {
	t.Helper()
	src, err := ParseSource(rd.Spec.Resource.Raw)
	require.NoError(t, err)
	return src
}

// ownedCopy is what a previous pass wrote into ns.
func ownedCopy(t *testing.T, rd *appsv1alpha1.ResourceDistribution, ns string) *corev1.Secret {
	t.Helper()
	s := desiredCopy(rd, mustSource(t, rd), ns, nil).(*corev1.Secret)
	s.UID, s.ResourceVersion = types.UID("copy-"+ns), "1"
	return s
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
