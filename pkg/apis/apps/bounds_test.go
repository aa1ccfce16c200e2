package apps_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// at walks a schema by a path of property names, "[]" (array items) and
// "{}" (map values).
func at(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, step := range strings.Split(path, ".") {
		switch step {
		case "[]":
			require.NotNil(t, s.Items, path)
			s = s.Items.Schema
		case "{}":
			require.NotNil(t, s.AdditionalProperties, path)
			s = s.AdditionalProperties.Schema
		default:
			p, ok := s.Properties[step]
			require.True(t, ok, "%s: no %s", path, step)
			s = &p
		}
	}
	return s
}

// The bounds of the shared NodeImage and of what jobs write into it are
// in the generated CRDs of both versions, with the numbers the controller
// works with (the Go constants).
func TestSharedObjectBounds(t *testing.T) {
	require.Equal(t, v1beta1.MaxPullSecretsPerJob, v1alpha1.MaxPullSecretsPerJob)
	require.Equal(t, v1beta1.MaxSandboxSize, v1alpha1.MaxSandboxSize)
	require.Equal(t, v1beta1.MaxOwnersPerTag, v1alpha1.MaxOwnersPerTag)
	require.Equal(t, v1beta1.MaxFailures, v1alpha1.MaxFailures)

	limit := func(n int) *int64 { v := int64(n); return &v }
	sandbox := func(t *testing.T, s *apiextensionsv1.JSONSchemaProps) {
		assert.Equal(t, limit(v1beta1.MaxSandboxEntries), at(t, s, "labels").MaxProperties)
		assert.Equal(t, limit(v1beta1.MaxSandboxEntries), at(t, s, "annotations").MaxProperties)
		var rules []string
		for _, r := range s.XValidations {
			rules = append(rules, r.Rule)
		}
		all := strings.Join(rules, "\n")
		assert.Contains(t, all, "self.labels.all(k, size(k) <= "+strconv.Itoa(v1beta1.MaxSandboxKeyLength)+")")
		assert.Contains(t, all, "self.annotations.all(k, size(k) <= "+strconv.Itoa(v1beta1.MaxSandboxKeyLength)+")")
		assert.Contains(t, all, "<= "+strconv.Itoa(v1beta1.MaxSandboxSize))
	}
	crds := readOurCRDs(t)
	for _, name := range []string{"imagepulljobs.apps.kruise.io", "imagelistpulljobs.apps.kruise.io"} {
		for _, v := range crds[name].Spec.Versions {
			t.Run(name+"/"+v.Name, func(t *testing.T) {
				spec := at(t, v.Schema.OpenAPIV3Schema, "spec")
				assert.Equal(t, limit(v1beta1.MaxPullSecretsPerJob), at(t, spec, "pullSecrets").MaxItems)
				assert.Equal(t, limit(253), at(t, spec, "pullSecrets.[]").MaxLength)
				sandbox(t, at(t, spec, "sandboxConfig"))
				if name == "imagepulljobs.apps.kruise.io" {
					assert.Equal(t, limit(v1beta1.MaxFailures), at(t, v.Schema.OpenAPIV3Schema, "status.failures").MaxItems)
				}
			})
		}
	}
	for _, v := range crds["nodeimages.apps.kruise.io"].Spec.Versions {
		t.Run("nodeimages/"+v.Name, func(t *testing.T) {
			images := at(t, v.Schema.OpenAPIV3Schema, "spec.images")
			assert.Equal(t, limit(v1beta1.MaxImagesPerNodeImage), images.MaxProperties)
			img := at(t, images, "{}")
			assert.Equal(t, limit(v1beta1.MaxPullSecretsPerImage), at(t, img, "pullSecrets").MaxItems)
			assert.Equal(t, limit(v1beta1.MaxTagsPerImage), at(t, img, "tags").MaxItems)
			assert.Equal(t, limit(v1beta1.MaxOwnersPerTag), at(t, img, "tags.[].ownerReferences").MaxItems)
			sandbox(t, at(t, img, "sandboxConfig"))
		})
	}
}

// A ContainerRecreateRequest's list bounds (needed by the API server to
// estimate the cost of the CEL rules) are in the generated CRD with the
// numbers kruise-controller works with.
func TestCRRBounds(t *testing.T) {
	limit := func(n int) *int64 { v := int64(n); return &v }
	for _, v := range readOurCRDs(t)["containerrecreaterequests.apps.kruise.io"].Spec.Versions {
		t.Run(v.Name, func(t *testing.T) {
			containers := at(t, v.Schema.OpenAPIV3Schema, "spec.containers")
			assert.Equal(t, limit(v1alpha1.MaxContainersPerRequest), containers.MaxItems)
			assert.Equal(t, limit(v1alpha1.MaxPortsPerContainer), at(t, containers, "[].ports").MaxItems)
		})
	}
}
