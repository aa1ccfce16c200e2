package inplace

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func TestReadState(t *testing.T) {
	const doc = `{"revision":"r2","updateTimestamp":"2026-07-01T10:00:00Z","lastContainerStatuses":{"app":{"imageID":"sha-1"}}}`
	want := &pub.InPlaceUpdateState{
		Revision:              "r2",
		UpdateTimestamp:       metav1.NewTime(time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC).Local()),
		LastContainerStatuses: map[string]pub.InPlaceUpdateContainerStatus{"app": {ImageID: "sha-1"}},
	}
	cases := []struct {
		name        string
		annotations map[string]string
		want        *pub.InPlaceUpdateState
		err         string
	}{
		{name: "none"},
		{name: "current key", annotations: map[string]string{pub.InPlaceUpdateStateKey: doc}, want: want},
		{name: "legacy key", annotations: map[string]string{pub.InPlaceUpdateStateKeyOld: doc}, want: want},
		{name: "current key first", annotations: map[string]string{pub.InPlaceUpdateStateKey: doc, pub.InPlaceUpdateStateKeyOld: "{"}, want: want},
		{name: "malformed", annotations: map[string]string{pub.InPlaceUpdateStateKeyOld: `{"revision":`},
			err: "pod ns/web: annotation inplace-update-state is not an in-place update state: unexpected end of JSON input"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := gen.Pod("web", gen.SetPodNamespace("ns"), gen.AddPodAnnotations(tc.annotations))
			got, err := ReadState(pod)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestWriteStateDropsTheLegacyKey(t *testing.T) {
	pod := gen.Pod("web", gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateStateKeyOld: "{}"}))
	require.NoError(t, WriteState(pod, &pub.InPlaceUpdateState{Revision: "r2"}))
	assert.Equal(t, map[string]string{pub.InPlaceUpdateStateKey: `{"revision":"r2","updateTimestamp":null,"lastContainerStatuses":null}`}, pod.Annotations)
}

func TestGraceRoundTrip(t *testing.T) {
	spec := specWith(func(s *Spec) {
		s.ContainerImages["app"] = "app:2"
		s.ContainerResources["app"] = corev1.ResourceRequirements{Requests: res("2", "")}
		s.ContainerRefMetadata["log"] = metav1.ObjectMeta{Labels: map[string]string{"zone": "b"}}
		s.Metadata = MetadataPatch{Labels: map[string]string{"tier": "front"}, Annotations: map[string]string{"a": "1"},
			RemovedLabels: []string{"old"}, RemovedAnnotations: []string{"gone"}}
	})
	g, err := NewGrace("r2", spec, 30)
	require.NoError(t, err)
	pod := gen.Pod("web", gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateGraceKeyOld: "{}"}))
	require.NoError(t, WriteGrace(pod, g))
	assert.NotContains(t, pod.Annotations, pub.InPlaceUpdateGraceKeyOld)

	// Field by field, in OpenKruise's names; metaDataPatch is bytes, so base64 on the wire.
	var wire map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(pod.Annotations[pub.InPlaceUpdateGraceKey]), &wire))
	assert.JSONEq(t, `"r2"`, string(wire["revision"]))
	assert.JSONEq(t, `{"app":"app:2"}`, string(wire["containerImages"]))
	assert.JSONEq(t, `{"app":{"requests":{"cpu":"2"}}}`, string(wire["containerResources"]))
	assert.JSONEq(t, `{"log":{"labels":{"zone":"b"}}}`, string(wire["containerRefMetadata"]))
	assert.JSONEq(t, `true`, string(wire["updateEnvFromMetadata"]))
	assert.JSONEq(t, `30`, string(wire["graceSeconds"]))
	var patchB64 string
	require.NoError(t, json.Unmarshal(wire["metaDataPatch"], &patchB64))
	patch, err := base64.StdEncoding.DecodeString(patchB64)
	require.NoError(t, err)
	assert.JSONEq(t, `{"metadata":{"labels":{"tier":"front","old":null},"annotations":{"a":"1","gone":null}}}`, string(patch))
	assert.Len(t, wire, 7)

	read, err := ReadGrace(pod)
	require.NoError(t, err)
	back, err := read.Spec()
	require.NoError(t, err)
	assert.Equal(t, spec, back)
}

// A grace record OpenKruise wrote (a two-way merge patch of metadata) reads as a Spec.
func TestGraceFromOpenKruise(t *testing.T) {
	patch := base64.StdEncoding.EncodeToString([]byte(`{"metadata":{"labels":{"x":"1"}}}`))
	pod := gen.Pod("web", gen.AddPodAnnotations(map[string]string{
		pub.InPlaceUpdateGraceKeyOld: `{"revision":"r2","containerImages":{"app":"app:2"},"metaDataPatch":"` + patch + `","graceSeconds":10,"newTemplate":{"metadata":{}}}`,
	}))
	g, err := ReadGrace(pod)
	require.NoError(t, err)
	assert.Equal(t, int32(10), g.GraceSeconds)
	assert.NotNil(t, g.NewTemplate)
	spec, err := g.Spec()
	require.NoError(t, err)
	assert.Equal(t, specWith(func(s *Spec) {
		s.ContainerImages["app"] = "app:2"
		s.Metadata.Labels = map[string]string{"x": "1"}
	}), spec)
}

func TestGraceMalformed(t *testing.T) {
	pod := gen.Pod("web", gen.SetPodNamespace("ns"), gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateGraceKey: "[]"}))
	_, err := ReadGrace(pod)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pod ns/web: annotation apps.kruise.io/inplace-update-grace is not an in-place update grace record")

	bad := &Grace{MetaDataPatch: []byte("{")}
	_, err = bad.Spec()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reading the metadata patch of the grace record")
}

func TestRemoveGrace(t *testing.T) {
	pod := gen.Pod("web", gen.AddPodAnnotations(map[string]string{pub.InPlaceUpdateGraceKey: "{}", pub.InPlaceUpdateGraceKeyOld: "{}", "x": "y"}))
	RemoveGrace(pod)
	assert.Equal(t, map[string]string{"x": "y"}, pod.Annotations)
}
