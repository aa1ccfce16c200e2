package storageversion

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func crd(storage string, stored []string, strategy apiextensionsv1.ConversionStrategyType) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "clonesets.apps.kruise.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "apps.kruise.io", Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "clonesets"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1alpha1", Served: true, Storage: storage == "v1alpha1"},
				{Name: "v1beta1", Served: true, Storage: storage == "v1beta1"},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: strategy},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: stored},
	}
	return c
}

func TestDecide(t *testing.T) {
	res := schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1beta1", Resource: "clonesets"}
	for name, tc := range map[string]struct {
		crd          *apiextensionsv1.CustomResourceDefinition
		needsWebhook bool
		want         Action
		stale        []string
	}{
		"all in the storage version":             {crd("v1beta1", []string{"v1beta1"}, apiextensionsv1.WebhookConverter), true, ActionNone, nil},
		"stored as v1alpha1 by OpenKruise 1.9.0": {crd("v1beta1", []string{"v1alpha1", "v1beta1"}, apiextensionsv1.WebhookConverter), true, ActionMigrate, []string{"v1alpha1"}},
		"only ever v1alpha1":                     {crd("v1beta1", []string{"v1alpha1"}, apiextensionsv1.WebhookConverter), true, ActionMigrate, []string{"v1alpha1"}},
		"same schema, no webhook needed":         {crd("v1beta1", []string{"v1alpha1", "v1beta1"}, apiextensionsv1.NoneConverter), false, ActionMigrate, []string{"v1alpha1"}},
		"webhook needed but conversion is None":  {crd("v1beta1", []string{"v1alpha1", "v1beta1"}, apiextensionsv1.NoneConverter), true, ActionBlocked, []string{"v1alpha1"}},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := Decide(tc.crd, tc.needsWebhook)
			require.NoError(t, err)
			assert.Equal(t, tc.want, d.Action)
			assert.Equal(t, tc.stale, d.Stale)
			assert.Equal(t, res, d.Resource)
			assert.Equal(t, []string{"v1beta1"}, d.StoredAfter())
			if tc.want == ActionBlocked {
				assert.Contains(t, d.Why, "left as they are")
			}
		})
	}
	_, err := Decide(crd("", nil, apiextensionsv1.NoneConverter), false)
	assert.Error(t, err, "no storage version")
}

// The CRDs whose versions differ are exactly those /convert converts in more than the version.
func TestKruiseCRDs(t *testing.T) {
	names := map[string]bool{}
	for _, c := range KruiseCRDs {
		names[c.Name] = c.NeedsWebhook
	}
	assert.Len(t, names, 10)
	assert.True(t, names["clonesets.apps.kruise.io"])
	assert.True(t, names["sidecarsets.apps.kruise.io"])
	assert.False(t, names["containerrecreaterequests.apps.kruise.io"])
	// AdvancedCronJob's v1alpha1 lacks a field, which the API server prunes: no webhook either.
	assert.False(t, names["advancedcronjobs.apps.kruise.io"])
}
