package metadataenv

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestParseFieldPath(t *testing.T) {
	for _, tc := range []struct {
		path string
		src  Source
		key  string
		ok   bool
	}{
		{"metadata.labels['app']", Labels, "app", true},
		{"metadata.annotations['example.com/track']", Annotations, "example.com/track", true},
		{"metadata.labels['a']b']", Labels, "a']b", true},
		{"metadata.labels", "", "", false},
		{"metadata.labels['']", "", "", false},
		{"metadata.name", "", "", false},
		{"status.podIP", "", "", false},
		{"spec.labels['app']", "", "", false},
		{"metadata.labels[\"app\"]", "", "", false},
	} {
		src, key, ok := ParseFieldPath(tc.path)
		assert.Equal(t, tc.ok, ok, tc.path)
		assert.Equal(t, tc.src, src, tc.path)
		assert.Equal(t, tc.key, key, tc.path)
	}
}

func fieldRef(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func TestVars(t *testing.T) {
	c := &corev1.Container{Env: []corev1.EnvVar{
		{Name: "PLAIN", Value: "x"},
		fieldRef("TRACK", "metadata.labels['track']"),
		fieldRef("POD", "metadata.name"),
		fieldRef("OWNER", "metadata.annotations['owner']"),
		// Redefined: the plain value wins.
		fieldRef("SHADOWED", "metadata.labels['s']"),
		{Name: "SHADOWED", Value: "fixed"},
		// Redefined the other way round: the fieldRef wins.
		{Name: "LATE", Value: "early"},
		fieldRef("LATE", "metadata.labels['late']"),
		{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
	}}
	assert.Equal(t, []Var{
		{Name: "TRACK", Source: Labels, Key: "track"},
		{Name: "OWNER", Source: Annotations, Key: "owner"},
		{Name: "LATE", Source: Labels, Key: "late"},
	}, Vars(c))
	assert.Empty(t, Vars(&corev1.Container{}))
	for _, v := range Vars(c) {
		src, key, ok := ParseFieldPath(v.FieldPath())
		assert.True(t, ok)
		assert.Equal(t, v, Var{Name: v.Name, Source: src, Key: key}, "FieldPath round-trips")
	}
}

func TestValue(t *testing.T) {
	labels := map[string]string{"track": "canary"}
	annotations := map[string]string{"owner": "team-b", "track": "from-annotation"}
	assert.Equal(t, "canary", Var{Source: Labels, Key: "track"}.Value(labels, annotations))
	assert.Equal(t, "team-b", Var{Source: Annotations, Key: "owner"}.Value(labels, annotations))
	assert.Equal(t, "", Var{Source: Labels, Key: "owner"}.Value(labels, annotations), "a missing key resolves to empty")
	assert.Equal(t, "", Var{Source: Annotations, Key: "x"}.Value(nil, nil))
}
