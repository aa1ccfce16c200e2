package launchbarrier

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestKeyRoundTrip(t *testing.T) {
	for _, p := range []int{0, 1, -1, 42, MinPriority, MaxPriority} {
		got, err := ParseKey(Key(p))
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
	assert.Equal(t, "p_-2", Key(-2), "OpenKruise's key format")
	for _, bad := range []string{"", "p_", "q_1", "p_x", "p_1.5", "p_ 1", "p_2147483648", "p_-2147483649", "1"} {
		_, err := ParseKey(bad)
		assert.Error(t, err, bad)
	}
}

func env(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

func container(name string, envs ...corev1.EnvVar) corev1.Container {
	return corev1.Container{Name: name, Env: envs}
}

func TestPriorities(t *testing.T) {
	cases := []struct {
		name    string
		ann     map[string]string
		cs      []corev1.Container
		want    []int
		wantErr []string // substrings of the error list, in order
	}{
		{name: "absent is 0", cs: []corev1.Container{container("a"), container("b", env(EnvPriority, "3"))}, want: []int{0, 3}},
		{name: "negative and signed", cs: []corev1.Container{container("a", env(EnvPriority, "-7")), container("b", env(EnvPriority, "+2"))}, want: []int{-7, 2}},
		{name: "the last of duplicates, as the kubelet", cs: []corev1.Container{container("a", env(EnvPriority, "1"), env(EnvPriority, "5"))}, want: []int{5}},
		{name: "Ordered: spec order", ann: map[string]string{AnnotationPriority: OrderedValue},
			cs: []corev1.Container{container("a"), container("b", env(EnvPriority, "9")), container("c")}, want: []int{0, -1, -2}},
		{name: "bounds", cs: []corev1.Container{container("a", env(EnvPriority, "2147483647")), container("b", env(EnvPriority, "-2147483648"))},
			want: []int{MaxPriority, MinPriority}},
		{name: "not an integer", cs: []corev1.Container{container("a", env(EnvPriority, "high"))},
			wantErr: []string{`spec.containers[0].env[0].value: Invalid value: "high": container "a": KRUISE_CONTAINER_PRIORITY must be an integer between -2147483648 and 2147483647`}},
		{name: "out of range", cs: []corev1.Container{container("a"), container("b", env(EnvPriority, "99999999999999999999"))},
			wantErr: []string{`spec.containers[1].env[0].value: Invalid value: "99999999999999999999"`}},
		{name: "empty", cs: []corev1.Container{container("a", env(EnvPriority, ""))}, wantErr: []string{`Invalid value: ""`}},
		{name: "spaces", cs: []corev1.Container{container("a", env(EnvPriority, " 1"))}, wantErr: []string{`Invalid value: " 1"`}},
		{name: "valueFrom", cs: []corev1.Container{{Name: "a", Env: []corev1.EnvVar{{Name: EnvPriority,
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
			wantErr: []string{`spec.containers[0].env[0].valueFrom: Forbidden: container "a": KRUISE_CONTAINER_PRIORITY must be a literal integer`}},
		{name: "bad annotation value", ann: map[string]string{AnnotationPriority: "ordered"}, cs: []corev1.Container{container("a"), container("b")},
			wantErr: []string{`metadata.annotations[apps.kruise.io/container-launch-priority]: Unsupported value: "ordered": supported values: "Ordered"`}},
		{name: "Ordered still checks the env values", ann: map[string]string{AnnotationPriority: OrderedValue},
			cs: []corev1.Container{container("a", env(EnvPriority, "x"))}, wantErr: []string{`Invalid value: "x"`}},
		{name: "every problem is listed", ann: map[string]string{AnnotationPriority: ""},
			cs:      []corev1.Container{container("a", env(EnvPriority, "1.5")), container("b", env(EnvPriority, "two"))},
			wantErr: []string{`Unsupported value: ""`, `Invalid value: "1.5"`, `Invalid value: "two"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{}
			pod.Annotations = tc.ann
			pod.Spec.Containers = tc.cs
			got, errs := Priorities(pod)
			if tc.wantErr == nil {
				require.Empty(t, errs)
				assert.Equal(t, tc.want, got)
				return
			}
			require.Len(t, errs, len(tc.wantErr), "%v", errs)
			for i, w := range tc.wantErr {
				assert.Contains(t, errs[i].Error(), w)
			}
		})
	}
}

func TestPrioritiesIgnoresInitContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: &always, Env: []corev1.EnvVar{env(EnvPriority, "not checked")}}},
		Containers:     []corev1.Container{container("a")},
	}}
	got, errs := Priorities(pod)
	assert.Empty(t, errs)
	assert.Equal(t, []int{0}, got)
}

func TestBarrierOf(t *testing.T) {
	withEnv := func(es ...corev1.EnvVar) *corev1.Container { c := container("app", es...); return &c }
	b, ok, err := BarrierOf(withEnv(env("OTHER", "x"), BarrierEnv("web-barrier", -3)))
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, Barrier{ConfigMap: "web-barrier", Priority: -3}, b)

	_, ok, err = BarrierOf(withEnv(env("OTHER", "x")))
	assert.False(t, ok)
	assert.NoError(t, err)

	// Twice the same: as the webhook called again would leave it.
	_, ok, err = BarrierOf(withEnv(BarrierEnv("web-barrier", 1), BarrierEnv("web-barrier", 1)))
	assert.True(t, ok)
	assert.NoError(t, err)

	bad := map[string]*corev1.Container{
		"literal value":   withEnv(env(EnvBarrier, "go")),
		"fieldRef":        withEnv(corev1.EnvVar{Name: EnvBarrier, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}),
		"malformed key":   withEnv(corev1.EnvVar{Name: EnvBarrier, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}, Key: "go"}}}),
		"no ConfigMap":    withEnv(BarrierEnv("", 1)),
		"two that differ": withEnv(BarrierEnv("web-barrier", 1), BarrierEnv("web-barrier", 2)),
	}
	for name, c := range bad {
		_, ok, err := BarrierOf(c)
		assert.True(t, ok, name)
		assert.Error(t, err, name)
		assert.Contains(t, err.Error(), `container "app"`, name)
	}
}

func TestBarrierName(t *testing.T) {
	assert.Equal(t, "web-0-barrier", BarrierName("web-0"), "OpenKruise's name")

	long := strings.Repeat("a", 120) + "." + strings.Repeat("b", 132) // 253: the longest pod name
	got := BarrierName(long)
	assert.Len(t, got, validation.DNS1123SubdomainMaxLength)
	assert.Empty(t, validation.IsDNS1123Subdomain(got), got)
	assert.True(t, strings.HasSuffix(got, BarrierSuffix))
	assert.NotEqual(t, got, BarrierName(strings.Repeat("a", 120)+"."+strings.Repeat("b", 131)+"c"), "the hash tells long names apart")
	// A cut that ends on a dot or dash is trimmed.
	dotty := strings.Repeat("a", 233) + "." + strings.Repeat("b", 19)
	assert.Empty(t, validation.IsDNS1123Subdomain(BarrierName(dotty)), BarrierName(dotty))
}

func TestGeneratedBarrierName(t *testing.T) {
	a := GeneratedBarrierName("web-7d9f-", "request-uid-1")
	assert.Equal(t, a, GeneratedBarrierName("web-7d9f-", "request-uid-1"), "the same request names the same ConfigMap")
	assert.NotEqual(t, a, GeneratedBarrierName("web-7d9f-", "request-uid-2"))
	assert.Regexp(t, `^web-7d9f-[bcdfghjklmnpqrstvwxz2456789]{10}-barrier$`, a)
	assert.Empty(t, validation.IsDNS1123Subdomain(a))

	r1, r2 := GeneratedBarrierName("job-", ""), GeneratedBarrierName("job-", "")
	assert.Regexp(t, `^job-[bcdfghjklmnpqrstvwxz2456789]{10}-barrier$`, r1)
	assert.NotEqual(t, r1, r2, "drawn at random without a seed")

	long := GeneratedBarrierName(strings.Repeat("x", 300)+"-", "uid")
	assert.Len(t, long, validation.DNS1123SubdomainMaxLength)
	assert.Empty(t, validation.IsDNS1123Subdomain(long), long)
}

// field.ErrorList is what callers get: a refusal lists every problem.
var _ field.ErrorList = func() field.ErrorList { _, errs := Priorities(&corev1.Pod{}); return errs }()
