package resourcedistribution

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

func TestTargetNames(t *testing.T) {
	nss := []*corev1.Namespace{
		namespace("a", map[string]string{"env": "prod"}),
		namespace("b", map[string]string{"env": "dev"}),
		namespace("c", map[string]string{"env": "prod"}),
		namespace("d", nil),
	}
	prod := metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	tests := []struct {
		name    string
		targets appsv1alpha1.ResourceDistributionTargets
		want    []string
	}{
		{"all", appsv1alpha1.ResourceDistributionTargets{AllNamespaces: true}, []string{"a", "b", "c", "d"}},
		{"all minus excluded", appsv1alpha1.ResourceDistributionTargets{AllNamespaces: true, ExcludedNamespaces: included("b")}, []string{"a", "c", "d"}},
		{"included, missing ones too", appsv1alpha1.ResourceDistributionTargets{IncludedNamespaces: included("d", "zz")}, []string{"d", "zz"}},
		{"selector", appsv1alpha1.ResourceDistributionTargets{NamespaceLabelSelector: prod}, []string{"a", "c"}},
		{"included ∪ selector − excluded", appsv1alpha1.ResourceDistributionTargets{NamespaceLabelSelector: prod,
			IncludedNamespaces: included("d"), ExcludedNamespaces: included("c")}, []string{"a", "d"}},
		{"expression selector", appsv1alpha1.ResourceDistributionTargets{NamespaceLabelSelector: metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpExists}}}}, []string{"a", "b", "c"}},
		{"empty selector selects none", appsv1alpha1.ResourceDistributionTargets{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, TargetNames(rdWith(secretJSON, tc.targets), nss))
		})
	}
}

func TestDecide(t *testing.T) {
	rd := rdWith(secretJSON, appsv1alpha1.ResourceDistributionTargets{IncludedNamespaces: included("new", "mine", "edited", "theirs", "gone")})
	src := mustSource(t, rd)
	terminating := namespace("gone", nil)
	terminating.DeletionTimestamp = &metav1.Time{}
	nss := []*corev1.Namespace{namespace("new", nil), namespace("mine", nil), namespace("edited", nil), namespace("theirs", nil),
		terminating, namespace("left", nil)}

	edited := ownedCopy(t, rd, "edited")
	edited.Data = map[string][]byte{"k": []byte("changed")}
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "theirs", UID: "other"}, Data: map[string][]byte{"x": nil}}
	copies := map[string]metav1.Object{"mine": ownedCopy(t, rd, "mine"), "edited": edited, "theirs": theirs, "left": ownedCopy(t, rd, "left")}

	p := Decide(rd, src, nss, copies)
	assert.Equal(t, []string{"edited", "gone", "mine", "new", "theirs"}, p.Targets)
	assert.Equal(t, map[string]Failure{
		"theirs": {appsv1alpha1.ResourceDistributionConflictOccurred, msgConflict},
		"gone":   {appsv1alpha1.ResourceDistributionNamespaceNotExists, msgNamespaceNo},
	}, p.Failures)
	var ops []string
	for _, a := range p.Actions {
		ops = append(ops, map[Op]string{OpCreate: "create", OpUpdate: "update", OpDelete: "delete"}[a.Op]+" "+a.Namespace)
	}
	// The edited copy is reverted, the unowned object left alone, the leaving namespace's copy deleted.
	assert.Equal(t, []string{"update edited", "create new", "delete left"}, ops)
	reverted := p.Actions[0].Object.(*corev1.Secret)
	assert.Equal(t, []byte("v"), reverted.Data["k"])
	assert.Equal(t, "1", reverted.ResourceVersion)
}

func TestDesiredCopy(t *testing.T) {
	rd := rdWith(secretJSON, appsv1alpha1.ResourceDistributionTargets{AllNamespaces: true})
	src := mustSource(t, rd)
	fresh := desiredCopy(rd, src, "ns", nil).(*corev1.Secret)
	assert.Equal(t, "ns", fresh.Namespace)
	assert.Equal(t, map[string]string{"team": "a", CopyLabel: "true"}, fresh.Labels)
	assert.Equal(t, src.Hash, fresh.Annotations[appsv1alpha1.ResourceDistributionHashAnnotation])
	assert.Len(t, src.Hash, 64)
	assert.Equal(t, "dist", fresh.Annotations[appsv1alpha1.ResourceDistributionSourceAnnotation])
	ref := metav1.GetControllerOf(fresh)
	require.NotNil(t, ref)
	assert.Equal(t, "rd-uid", string(ref.UID))
	assert.True(t, *ref.BlockOwnerDeletion)

	// A copy's own labels, annotations and finalizers stay; the source's win where both have one.
	existing := fresh.DeepCopy()
	existing.Labels["extra"], existing.Labels["team"] = "x", "b"
	existing.Annotations = map[string]string{"note": "kept"}
	existing.Finalizers = []string{"example.com/f"}
	merged := desiredCopy(rd, src, "ns", existing).(*corev1.Secret)
	assert.Equal(t, map[string]string{"team": "a", "extra": "x", CopyLabel: "true"}, merged.Labels)
	assert.Equal(t, "kept", merged.Annotations["note"])
	assert.Equal(t, []string{"example.com/f"}, merged.Finalizers)
	assert.False(t, upToDate(existing, merged), "the changed source label is written back")

	// A copy as written is up to date: no write.
	assert.True(t, upToDate(fresh, desiredCopy(rd, src, "ns", fresh)))
}

// A Secret written with stringData and no type is stored with data and type Opaque; its copy as
// stored compares equal (else every pass would write).
func TestSourceNormalisedAsStored(t *testing.T) {
	rd := rdWith(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","resourceVersion":"9","uid":"x"},"stringData":{"k":"v"}}`,
		appsv1alpha1.ResourceDistributionTargets{AllNamespaces: true})
	src := mustSource(t, rd)
	assert.Equal(t, corev1.SecretTypeOpaque, src.Secret.Type)
	assert.Equal(t, map[string][]byte{"k": []byte("v")}, src.Secret.Data)
	assert.Empty(t, src.Secret.ResourceVersion)
	stored := desiredCopy(rd, src, "ns", nil).(*corev1.Secret)
	stored.UID, stored.ResourceVersion = "u", "1"
	assert.True(t, upToDate(stored, desiredCopy(rd, src, "ns", stored)))
}

func TestParseSourceRefuses(t *testing.T) {
	for _, raw := range []string{``, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`,
		`{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"c"}}`, `{"apiVersion":"v1","kind":"ConfigMap"}`} {
		_, err := ParseSource([]byte(raw))
		assert.Error(t, err, raw)
	}
}

func TestStatusConditionsInOrder(t *testing.T) {
	now := metav1.Unix(100, 0)
	earlier := metav1.Unix(50, 0)
	old := appsv1alpha1.ResourceDistributionStatus{Conditions: []appsv1alpha1.ResourceDistributionCondition{
		{Type: appsv1alpha1.ResourceDistributionConflictOccurred, Status: appsv1alpha1.ResourceDistributionConditionTrue, LastTransitionTime: earlier},
		{Type: appsv1alpha1.ResourceDistributionCreateResourceFailed, Status: appsv1alpha1.ResourceDistributionConditionFalse, LastTransitionTime: earlier},
	}}
	st := Status(&old, 3, []string{"a", "b", "c", "d"}, map[string]Failure{
		"c": {appsv1alpha1.ResourceDistributionConflictOccurred, "conflict c"},
		"b": {appsv1alpha1.ResourceDistributionConflictOccurred, "conflict b"},
		"x": {appsv1alpha1.ResourceDistributionDeleteResourceFailed, "boom"},
	}, map[string]bool{"d": true}, now)
	assert.Equal(t, int32(4), st.Desired)
	assert.Equal(t, int32(1), st.Succeeded)
	assert.Equal(t, int32(3), st.Failed)
	assert.Equal(t, int64(3), st.ObservedGeneration)
	var types []appsv1alpha1.ResourceDistributionConditionType
	for _, c := range st.Conditions {
		types = append(types, c.Type)
	}
	assert.Equal(t, conditionOrder, types)
	conflict := st.Conditions[4]
	assert.Equal(t, appsv1alpha1.ResourceDistributionConditionTrue, conflict.Status)
	assert.Equal(t, []string{"b", "c"}, conflict.FailedNamespaces)
	assert.Equal(t, "conflict b", conflict.Reason)
	assert.Equal(t, earlier, conflict.LastTransitionTime, "status unchanged: time kept")
	assert.Equal(t, earlier, st.Conditions[1].LastTransitionTime)
	assert.Equal(t, now, st.Conditions[3].LastTransitionTime, "new condition")
	assert.Equal(t, []string{"x"}, st.Conditions[3].FailedNamespaces)
	assert.Equal(t, "Succeeded", st.Conditions[0].Reason)
	assert.False(t, statusChanged(&st, &st))
}
