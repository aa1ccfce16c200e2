package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
	"github.com/nodekruise/kruise/test/unit/metrictest"
)

// filler fills objects with values that survive JSON as they are (times
// to the second, valid managedFields).
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).Funcs(
		func(tm *metav1.TypeMeta, c randfill.Continue) {},
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

// kindCase makes random objects of one kind in either version.
type kindCase struct {
	kind        string
	alpha, beta func() runtime.Object
}

var kindCases = []kindCase{
	{kind: "NodeImage", alpha: func() runtime.Object { return &v1alpha1.NodeImage{} }, beta: func() runtime.Object { return &v1beta1.NodeImage{} }},
	{kind: "ImagePullJob", alpha: func() runtime.Object { return &v1alpha1.ImagePullJob{} }, beta: func() runtime.Object { return &v1beta1.ImagePullJob{} }},
	{kind: "ImageListPullJob", alpha: func() runtime.Object { return &v1alpha1.ImageListPullJob{} }, beta: func() runtime.Object { return &v1beta1.ImageListPullJob{} }},
	{kind: "ContainerRecreateRequest", alpha: func() runtime.Object { return &v1alpha1.ContainerRecreateRequest{} },
		beta: func() runtime.Object { return &v1beta1.ContainerRecreateRequest{} }},
	{kind: "CloneSet", alpha: func() runtime.Object { return &v1alpha1.CloneSet{} }, beta: func() runtime.Object { return &v1beta1.CloneSet{} }},
	{kind: "DaemonSet", alpha: func() runtime.Object { return &v1alpha1.DaemonSet{} }, beta: func() runtime.Object { return &v1beta1.DaemonSet{} }},
	{kind: "StatefulSet", alpha: func() runtime.Object { return &v1alpha1.StatefulSet{} }, beta: func() runtime.Object { return &v1beta1.StatefulSet{} }},
	{kind: "SidecarSet", alpha: func() runtime.Object { return &v1alpha1.SidecarSet{} }, beta: func() runtime.Object { return &v1beta1.SidecarSet{} }},
}

func TestEveryKindServedIsConverted(t *testing.T) {
	var names []string
	for _, kc := range kindCases {
		names = append(names, kc.kind)
	}
	assert.ElementsMatch(t, names, Kinds())
}

// Random objects of every kind go through the handler to the other version
// and back, as one list per kind and direction, and come back as they were.
func TestRoundTripThroughTheHandler(t *testing.T) {
	const perList = 40
	e := newEnv(t, Options{})
	for _, kc := range kindCases {
		for _, dir := range []struct {
			from, to string
			make     func() runtime.Object
		}{
			{from: alpha, to: beta, make: kc.alpha},
			{from: beta, to: alpha, make: kc.beta},
		} {
			t.Run(fmt.Sprintf("%s %s to %s", kc.kind, dir.from, dir.to), func(t *testing.T) {
				objs := make([]any, perList)
				for i := range objs {
					o := dir.make()
					filler(int64(i)).Fill(o)
					o.GetObjectKind().SetGroupVersionKind(gvk(dir.from, kc.kind))
					objs[i] = o
				}
				in := raw(t, objs...)
				there := e.convert(dir.to, in)
				for i, o := range there {
					var head objectHead
					require.NoError(t, json.Unmarshal(o.Raw, &head))
					assert.Equal(t, dir.to, head.APIVersion, "object %d", i)
					assert.Equal(t, kc.kind, head.Kind, "object %d", i)
				}
				back := e.convert(dir.from, there)
				for i := range in {
					require.JSONEq(t, string(in[i].Raw), string(back[i].Raw), "object %d changed on the way", i)
				}
			})
		}
	}
}

func gvk(apiVersion, kind string) schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(apiVersion, kind)
}

// What OpenKruise's clients of v1alpha1 lose with conversion strategy
// None: a NodeImage's pullSecrets[].mode. Through the webhook it travels in
// an annotation and comes back, also after a v1alpha1 client changed the
// object.
func TestNodeImagePullSecretModeSurvivesV1alpha1(t *testing.T) {
	e := newEnv(t, Options{})
	ni := gen.NodeImage("node-a",
		gen.SetNodeImageUID("uid-a"), gen.SetNodeImageResourceVersion("7"),
		gen.SetNodeImagePullSecrets("registry.example/app",
			v1beta1.ReferenceObject{Namespace: "kruise-daemon-config", Name: "old"},
			v1beta1.ReferenceObject{Namespace: "kruise-daemon-config", Name: "shared", Mode: v1beta1.ReferenceObjectModeBatch}),
		gen.AddNodeImageTags("registry.example/app", v1beta1.ImageTagSpec{Tag: "v1", Version: 1}),
		gen.AddNodeImageTags("registry.example/plain", v1beta1.ImageTagSpec{Tag: "v2"}),
		gen.SetNodeImageStatus(v1beta1.NodeImageStatus{Desired: 2, Succeeded: 1}),
	)
	ni.Annotations = map[string]string{"team": "infra"}
	ni.TypeMeta = metav1.TypeMeta{APIVersion: beta, Kind: "NodeImage"}

	alphaRaw := e.convert(alpha, raw(t, ni))[0].Raw
	assert.NotContains(t, string(alphaRaw), `"mode"`, "v1alpha1 has no mode")
	var a v1alpha1.NodeImage
	require.NoError(t, json.Unmarshal(alphaRaw, &a))
	assert.Equal(t, alpha, a.APIVersion)
	assert.Equal(t, ni.ObjectMeta.Name, a.Name)
	assert.Equal(t, ni.UID, a.UID, "the API server refuses a conversion that changes the UID")
	assert.Equal(t, "infra", a.Annotations["team"])
	assert.JSONEq(t, `{"registry.example/app":["","batch"]}`, a.Annotations[v1alpha1.PullSecretModesAnnotation])
	assert.Equal(t, []v1alpha1.ReferenceObject{
		{Namespace: "kruise-daemon-config", Name: "old"}, {Namespace: "kruise-daemon-config", Name: "shared"},
	}, a.Spec.Images["registry.example/app"].PullSecrets)

	betaRaw := e.convert(beta, raw(t, &a))[0].Raw
	want, err := json.Marshal(ni)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(betaRaw), "v1beta1 → v1alpha1 → v1beta1 loses nothing, the helper annotation included")

	// A v1alpha1 client adds a tag and writes the object back, annotation and all.
	img := a.Spec.Images["registry.example/app"]
	img.Tags = append(img.Tags, v1alpha1.ImageTagSpec{Tag: "v3"})
	a.Spec.Images["registry.example/app"] = img
	var updated v1beta1.NodeImage
	require.NoError(t, json.Unmarshal(e.convert(beta, raw(t, &a))[0].Raw, &updated))
	assert.Equal(t, []v1beta1.ReferenceObject{
		{Namespace: "kruise-daemon-config", Name: "old"},
		{Namespace: "kruise-daemon-config", Name: "shared", Mode: v1beta1.ReferenceObjectModeBatch},
	}, updated.Spec.Images["registry.example/app"].PullSecrets)
	assert.Len(t, updated.Spec.Images["registry.example/app"].Tags, 2)
	assert.Equal(t, map[string]string{"team": "infra"}, updated.Annotations)
}

// One review carries items of several kinds and versions (the API server
// sends the items of a list not yet in the wanted version; nothing stops a
// caller from mixing kinds): each is converted by its kind, in order, and one
// already in the wanted version is passed on byte for byte.
func TestMixedKindList(t *testing.T) {
	e := newEnv(t, Options{})
	ni := gen.NodeImage("node-a", gen.SetNodeImagePullSecrets("app",
		v1beta1.ReferenceObject{Namespace: "ns", Name: "s", Mode: v1beta1.ReferenceObjectModeBatch}))
	ni.TypeMeta = metav1.TypeMeta{APIVersion: beta, Kind: "NodeImage"}
	job := v1alpha1.ImagePullJobFromV1beta1(gen.ImagePullJob("pull", gen.SetImagePullJobNamespace("default"),
		gen.SetImagePullJobImage("nginx:1.27"), gen.SetImagePullJobStartTime(time.Unix(1700000000, 0))))
	crr := gen.CRR("restart", gen.SetCRRNamespace("default"), gen.SetCRRPodName("web-0"), gen.SetCRRContainers("app"))
	crr.TypeMeta = metav1.TypeMeta{APIVersion: alpha, Kind: "ContainerRecreateRequest"}
	list := gen.ImageListPullJob("list", gen.SetImageListPullJobNamespace("default"), gen.SetImageListPullJobImages("a:1", "b:2"))
	list.TypeMeta = metav1.TypeMeta{APIVersion: beta, Kind: "ImageListPullJob"}
	// A key order and a shape (no spec, no status) the Go types would not
	// produce: passed on unchanged (but for the spaces JSON encoding drops).
	passed := []byte(`{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest", "metadata": {"name": "as-is"}}`)

	in := raw(t, ni, job, crr, list)
	in = append(in, runtime.RawExtension{Raw: passed})
	out := e.convert(alpha, in)

	kinds := make([]string, len(out))
	for i, o := range out {
		var head objectHead
		require.NoError(t, json.Unmarshal(o.Raw, &head))
		assert.Equal(t, alpha, head.APIVersion, "object %d", i)
		kinds[i] = head.Kind
	}
	assert.Equal(t, []string{"NodeImage", "ImagePullJob", "ContainerRecreateRequest", "ImageListPullJob", "ContainerRecreateRequest"}, kinds)
	assert.Contains(t, string(out[0].Raw), v1alpha1.PullSecretModesAnnotation)
	assert.Equal(t, in[1].Raw, out[1].Raw, "an object already in the wanted version is passed on")
	var compact bytes.Buffer
	require.NoError(t, json.Compact(&compact, passed))
	assert.Equal(t, compact.String(), string(out[4].Raw))

	var gotList v1alpha1.ImageListPullJob
	require.NoError(t, json.Unmarshal(out[3].Raw, &gotList))
	assert.Equal(t, []string{"a:1", "b:2"}, gotList.Spec.Images)

	// Only what changed version counts as converted.
	for kind, want := range map[string]float64{"NodeImage": 1, "ImageListPullJob": 1, "ImagePullJob": 0, "ContainerRecreateRequest": 0} {
		assert.Equal(t, want, metrictest.Counter(t, e.reg, "kruise_webhook_converted_objects_total", map[string]string{"kind": kind, "version": alpha}), kind)
	}
}
