package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// twoOfEach names two labels and two finalizers.
var twoOfEach = &pub.LifecycleHook{
	LabelsHandler:     map[string]string{"a": "true", "b": "true"},
	FinalizersHandler: []string{"example.com/x", "example.com/y"},
}

func TestHookedAndAllHooked(t *testing.T) {
	labels := func(kv ...string) gen.PodModifier {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return gen.AddPodLabels(m)
	}
	tests := []struct {
		name    string
		hook    *pub.LifecycleHook
		pod     *corev1.Pod
		wantAny bool
		wantAll bool
	}{
		{name: "nil hook", hook: nil, pod: gen.Pod("web", labels("a", "true"))},
		{name: "nil pod", hook: twoOfEach, pod: nil},
		{name: "empty hook: holds nothing, all of nothing is there", hook: &pub.LifecycleHook{}, pod: gen.Pod("web"), wantAll: true},
		{name: "nothing on the pod", hook: twoOfEach, pod: gen.Pod("web")},
		{name: "one label of two", hook: twoOfEach, pod: gen.Pod("web", labels("a", "true")), wantAny: true},
		{name: "one finalizer of two", hook: twoOfEach, pod: gen.Pod("web", gen.AddPodFinalizers("example.com/y")), wantAny: true},
		{name: "label with another value", hook: twoOfEach, pod: gen.Pod("web", labels("a", "false", "b", "no"))},
		{name: "labels all, finalizers not", hook: twoOfEach, pod: gen.Pod("web", labels("a", "true", "b", "true")), wantAny: true},
		{name: "finalizers all, labels not", hook: twoOfEach, pod: gen.Pod("web", gen.AddPodFinalizers("example.com/x", "example.com/y")), wantAny: true},
		{name: "everything", hook: twoOfEach, pod: gen.Pod("web", labels("a", "true", "b", "true"), gen.AddPodFinalizers("other", "example.com/y", "example.com/x")), wantAny: true, wantAll: true},
		{name: "label form only, complete", hook: &pub.LifecycleHook{LabelsHandler: map[string]string{"a": "true"}}, pod: gen.Pod("web", labels("a", "true")), wantAny: true, wantAll: true},
		{name: "finalizer form only, complete", hook: &pub.LifecycleHook{FinalizersHandler: []string{"example.com/x"}}, pod: gen.Pod("web", gen.AddPodFinalizers("example.com/x")), wantAny: true, wantAll: true},
		{name: "empty label value needs the label", hook: &pub.LifecycleHook{LabelsHandler: map[string]string{"a": ""}}, pod: gen.Pod("web")},
		{name: "empty label value present", hook: &pub.LifecycleHook{LabelsHandler: map[string]string{"a": ""}}, pod: gen.Pod("web", labels("a", "")), wantAny: true, wantAll: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wantAny, Hooked(tc.hook, tc.pod), "Hooked")
			assert.Equal(t, tc.wantAll, AllHooked(tc.hook, tc.pod), "AllHooked")
		})
	}
}

func TestRestoreHook(t *testing.T) {
	p := gen.Pod("web", gen.AddPodLabels(map[string]string{"a": "false", "app": "web"}), gen.AddPodFinalizers("example.com/y", "other"))
	RestoreHook(p, twoOfEach)
	assert.Equal(t, map[string]string{"a": "true", "b": "true", "app": "web"}, p.Labels)
	assert.Equal(t, []string{"example.com/y", "other", "example.com/x"}, p.Finalizers, "no finalizer twice")
	assert.True(t, AllHooked(twoOfEach, p))

	bare := gen.Pod("web")
	RestoreHook(bare, nil)
	assert.Equal(t, gen.Pod("web"), bare)
	RestoreHook(bare, &pub.LifecycleHook{LabelsHandler: map[string]string{"a": "true"}})
	assert.Equal(t, map[string]string{"a": "true"}, bare.Labels)
}

func TestMarksNotReady(t *testing.T) {
	mark := &pub.LifecycleHook{MarkPodNotReady: true}
	tests := []struct {
		name string
		lc   *pub.Lifecycle
		want bool
	}{
		{name: "no lifecycle"},
		{name: "hooks without it", lc: &pub.Lifecycle{PreDelete: &pub.LifecycleHook{}, InPlaceUpdate: &pub.LifecycleHook{}}},
		{name: "preDelete", lc: &pub.Lifecycle{PreDelete: mark}, want: true},
		{name: "inPlaceUpdate", lc: &pub.Lifecycle{InPlaceUpdate: mark}, want: true},
		{name: "preNormal does not count", lc: &pub.Lifecycle{PreNormal: mark}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, MarksNotReady(tc.lc))
		})
	}
}
