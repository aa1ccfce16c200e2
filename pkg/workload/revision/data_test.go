package revision

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// webTemplateData is PatchData of webTemplate("nginx:1.25") at spec.template:
// OpenKruise's layout, keys sorted.
const webTemplateData = `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},` +
	`"spec":{"containers":[{"image":"nginx:1.25","name":"main","resources":{}}]}}}}`

func webTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

func TestPatchData(t *testing.T) {
	big := int64(1<<62 + 1)
	tests := []struct {
		name  string
		value any
		path  []string
		want  string
	}{{
		name:  "a pod template at spec.template, as OpenKruise records it",
		value: webTemplate("nginx:1.25"),
		path:  []string{"spec", "template"},
		want:  webTemplateData,
	}, {
		name:  "part of a spec (SidecarSet) replaces at spec",
		value: map[string]any{"containers": []corev1.Container{{Name: "log"}}, "volumes": nil},
		path:  []string{"spec"},
		want:  `{"spec":{"$patch":"replace","containers":[{"name":"log","resources":{}}],"volumes":null}}`,
	}, {
		name:  "an int64 beyond 2^53 keeps its digits",
		value: corev1.PodSpec{TerminationGracePeriodSeconds: &big},
		path:  []string{"spec"},
		want:  `{"spec":{"$patch":"replace","containers":null,"terminationGracePeriodSeconds":4611686018427387905}}`,
	}, {
		name:  "a value that is not an object is recorded without the directive",
		value: []string{"a"},
		path:  []string{"spec", "list"},
		want:  `{"spec":{"list":["a"]}}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := PatchData(tt.value, tt.path...)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(data))
			again, err := PatchData(tt.value, tt.path...)
			require.NoError(t, err)
			assert.Equal(t, data, again, "the bytes are stable across calls")
		})
	}
	_, err := PatchData(webTemplate("x"))
	assert.Error(t, err, "a path is required")
}

func TestDecodeDataRestoresTheTemplate(t *testing.T) {
	want := webTemplate("nginx:1.25")
	data, err := PatchData(want, "spec", "template")
	require.NoError(t, err)

	var got corev1.PodTemplateSpec
	require.NoError(t, DecodeData(data, &got, "spec", "template"))
	assert.Equal(t, want, got)

	assert.Error(t, DecodeData(data, &got, "spec", "other"), "a missing key is an error")
	assert.Error(t, DecodeData(data, &got, "spec", "template", "metadata", "labels", "app", "x"), "a non-object on the path is an error")
	assert.Error(t, DecodeData([]byte("{"), &got, "spec"), "broken JSON is an error")
}

func TestEqualData(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{"same bytes", webTemplateData, webTemplateData, true},
		{
			name: "OpenKruise on k8s.io/api 1.32 writes creationTimestamp null; same template",
			a:    webTemplateData,
			b: `{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"web"}},` +
				`"spec":{"containers":[{"image":"nginx:1.25","name":"main","resources":{}}]}}}}`,
			want: true,
		},
		{
			name: "key order does not matter",
			a:    `{"spec":{"a":1,"b":2}}`,
			b:    `{"spec":{"b":2,"a":1}}`,
			want: true,
		},
		{
			name: "another image differs",
			a:    webTemplateData,
			b: `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},` +
				`"spec":{"containers":[{"image":"nginx:1.26","name":"main","resources":{}}]}}}}`,
			want: false,
		},
		{"list order matters", `{"spec":{"l":[1,2]}}`, `{"spec":{"l":[2,1]}}`, false},
		{"a number and its string differ", `{"spec":{"n":1}}`, `{"spec":{"n":"1"}}`, false},
		{"broken JSON equals nothing else", `{`, `{}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, EqualData([]byte(tt.a), []byte(tt.b)))
			assert.Equal(t, tt.want, EqualData([]byte(tt.b), []byte(tt.a)), "symmetric")
		})
	}
}
