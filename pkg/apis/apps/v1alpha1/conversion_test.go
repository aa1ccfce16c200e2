package v1alpha1

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

const fuzzRounds = 300

func newFiller(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).Funcs(
		func(tm *metav1.TypeMeta, c randfill.Continue) {}, // set by the conversion
		func(f *metav1.FieldsV1, c randfill.Continue) { f.Raw = []byte(`{"f:spec":{}}`) },
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.Unix(c.Int63n(4e9), 0).Rfc3339Copy() },
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*v = intstr.FromInt32(c.Int31())
			} else {
				*v = intstr.FromString(c.String(8))
			}
		},
	)
}

// roundTrip checks that converting with there and back returns the original,
// both as Go values and as JSON on the wire.
func roundTrip[A any, B any](t *testing.T, orig A, there func(A) B, back func(B) A) {
	t.Helper()
	got := back(there(orig))
	if !apiequality.Semantic.DeepEqual(orig, got) {
		a, _ := json.MarshalIndent(orig, "", " ")
		b, _ := json.MarshalIndent(got, "", " ")
		require.Equal(t, string(a), string(b), "round trip changed the object")
		require.Fail(t, "round trip changed the object (semantically)")
	}
	a, err := json.Marshal(orig)
	require.NoError(t, err)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(a), string(b))
}

func TestImagePullJobRoundTrip(t *testing.T) {
	for i := 0; i < fuzzRounds; i++ {
		f := newFiller(int64(i))

		alpha := &ImagePullJob{}
		f.Fill(alpha)
		alpha.TypeMeta = metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "ImagePullJob"}
		roundTrip(t, alpha, ImagePullJobToV1beta1, ImagePullJobFromV1beta1)

		beta := &v1beta1.ImagePullJob{}
		f.Fill(beta)
		beta.TypeMeta = metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ImagePullJob"}
		roundTrip(t, beta, ImagePullJobFromV1beta1, ImagePullJobToV1beta1)
	}
}

func TestImageListPullJobRoundTrip(t *testing.T) {
	for i := 0; i < fuzzRounds; i++ {
		f := newFiller(int64(i))

		alpha := &ImageListPullJob{}
		f.Fill(alpha)
		alpha.TypeMeta = metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "ImageListPullJob"}
		roundTrip(t, alpha, ImageListPullJobToV1beta1, ImageListPullJobFromV1beta1)

		beta := &v1beta1.ImageListPullJob{}
		f.Fill(beta)
		beta.TypeMeta = metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ImageListPullJob"}
		roundTrip(t, beta, ImageListPullJobFromV1beta1, ImageListPullJobToV1beta1)
	}
}

func TestNodeImageRoundTrip(t *testing.T) {
	for i := 0; i < fuzzRounds; i++ {
		f := newFiller(int64(i))

		alpha := &NodeImage{}
		f.Fill(alpha)
		alpha.TypeMeta = metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "NodeImage"}
		roundTrip(t, alpha, NodeImageToV1beta1, NodeImageFromV1beta1)

		beta := &v1beta1.NodeImage{}
		f.Fill(beta)
		beta.TypeMeta = metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "NodeImage"}
		roundTrip(t, beta, NodeImageFromV1beta1, NodeImageToV1beta1)
	}
}

// The one field v1alpha1 lacks travels in an annotation and comes back.
func TestNodeImagePullSecretModeKeptInAnnotation(t *testing.T) {
	beta := &v1beta1.NodeImage{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec: v1beta1.NodeImageSpec{Images: map[string]v1beta1.ImageSpec{
			"registry.example/app": {
				PullSecrets: []v1beta1.ReferenceObject{
					{Namespace: "kruise-daemon-config", Name: "old"},
					{Namespace: "kruise-daemon-config", Name: "shared", Mode: v1beta1.ReferenceObjectModeBatch},
				},
				Tags: []v1beta1.ImageTagSpec{{Tag: "v1"}},
			},
			"registry.example/plain": {Tags: []v1beta1.ImageTagSpec{{Tag: "v2"}}},
		}},
	}

	alpha := NodeImageFromV1beta1(beta)
	assert.JSONEq(t, `{"registry.example/app":["","batch"]}`, alpha.Annotations[PullSecretModesAnnotation])
	raw, err := json.Marshal(alpha)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), `"mode"`)

	back := NodeImageToV1beta1(alpha)
	assert.Nil(t, back.Annotations, "the helper annotation must not reach v1beta1")
	assert.Equal(t, beta.Spec, back.Spec)

	// Without any mode there is nothing to keep.
	beta.Spec.Images["registry.example/app"].PullSecrets[1].Mode = ""
	assert.NotContains(t, NodeImageFromV1beta1(beta).Annotations, PullSecretModesAnnotation)
}

func TestConversionDoesNotAlias(t *testing.T) {
	alpha := &ImagePullJob{Spec: ImagePullJobSpec{Image: "a", ImagePullJobTemplate: ImagePullJobTemplate{PullSecrets: []string{"s"}}}}
	beta := ImagePullJobToV1beta1(alpha)
	beta.Spec.PullSecrets[0] = "changed"
	assert.Equal(t, "s", alpha.Spec.PullSecrets[0])
}

func TestContainerRecreateRequestRoundTrip(t *testing.T) {
	for i := 0; i < fuzzRounds; i++ {
		f := newFiller(int64(i))

		alpha := &ContainerRecreateRequest{}
		f.Fill(alpha)
		alpha.TypeMeta = metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "ContainerRecreateRequest"}
		roundTrip(t, alpha, ContainerRecreateRequestToV1beta1, ContainerRecreateRequestFromV1beta1)

		beta := &v1beta1.ContainerRecreateRequest{}
		f.Fill(beta)
		beta.TypeMeta = metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ContainerRecreateRequest"}
		roundTrip(t, beta, ContainerRecreateRequestFromV1beta1, ContainerRecreateRequestToV1beta1)
	}
}

// The two versions of a request are the same JSON but for apiVersion: what
// the API server's conversion strategy None relies on.
func TestContainerRecreateRequestVersionsShareTheirJSON(t *testing.T) {
	for i := 0; i < fuzzRounds; i++ {
		alpha := &ContainerRecreateRequest{}
		newFiller(int64(i)).Fill(alpha)
		beta := ContainerRecreateRequestToV1beta1(alpha)
		alpha.TypeMeta = metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "ContainerRecreateRequest"}
		a, err := json.Marshal(alpha)
		require.NoError(t, err)
		b, err := json.Marshal(beta)
		require.NoError(t, err)
		require.JSONEq(t, string(a), string(b))
	}
}
