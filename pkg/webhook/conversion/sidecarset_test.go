package conversion

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// A SidecarSet written as v1alpha1 with a namespace is stored as v1beta1
// with a namespaceSelector (what the controller reads), and after the
// controller writes its status, a v1alpha1 client still reads the namespace
// it wrote, not the selector OpenKruise would give it.
func TestSidecarSetNamespaceSurvivesV1beta1(t *testing.T) {
	e := newEnv(t, Options{})
	ss := &v1alpha1.SidecarSet{
		TypeMeta: metav1.TypeMeta{APIVersion: alpha, Kind: "SidecarSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "log-agent", UID: "uid-ss",
			Labels: map[string]string{v1alpha1.SidecarSetCustomVersionLabel: "v1", "team": "infra"}},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Namespace:  "team-a",
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "log", Image: "agent:1"}}},
		},
	}

	var b v1beta1.SidecarSet
	require.NoError(t, json.Unmarshal(e.convert(beta, raw(t, ss))[0].Raw, &b))
	assert.Equal(t, beta, b.APIVersion)
	assert.Equal(t, ss.UID, b.UID, "the API server refuses a conversion that changes the UID")
	assert.Equal(t, map[string]string{v1alpha1.NamespaceNameLabel: "team-a"}, b.Spec.NamespaceSelector.MatchLabels)
	assert.Equal(t, "v1", b.Spec.CustomVersion)
	assert.Equal(t, map[string]string{"team": "infra"}, b.Labels)
	assert.JSONEq(t, `{"namespace":"team-a","labels":{"apps.kruise.io/sidecarset-custom-version":"v1"}}`,
		b.Annotations[v1alpha1.SidecarSetV1alpha1FieldsAnnotation])

	b.Status = v1beta1.SidecarSetStatus{MatchedPods: 4, UpdatedPods: 4, ReadyPods: 3} // the controller's write
	var a v1alpha1.SidecarSet
	require.NoError(t, json.Unmarshal(e.convert(alpha, raw(t, &b))[0].Raw, &a))
	want := ss.DeepCopy()
	want.Status = v1alpha1.SidecarSetStatus{MatchedPods: 4, UpdatedPods: 4, ReadyPods: 3}
	assert.Equal(t, want, &a)
}
