package inplace

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func barrier(p int) gen.ContainerModifier {
	return gen.AddContainerEnv(launchbarrier.BarrierEnv("web-barrier", p))
}

func priorityEnv(v string) gen.ContainerModifier {
	return gen.AddContainerEnv(corev1.EnvVar{Name: launchbarrier.EnvPriority, Value: v})
}

// imagesOf is a spec changing the image of each named container.
func imagesOf(names ...string) *Spec {
	s := newSpec()
	for _, n := range names {
		s.ContainerImages[n] = n + ":2"
	}
	return s
}

func TestBatches(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		spec *Spec
		want [][]string
	}{{
		name: "no priorities: one batch",
		pod:  gen.Pod("web", gen.SetPodContainers(gen.Container("a"), gen.Container("b"))),
		spec: imagesOf("a", "b"),
		want: [][]string{{"a", "b"}},
	}, {
		name: "barriers: higher first",
		pod: gen.Pod("web", gen.SetPodContainers(
			gen.Container("low", barrier(-1)), gen.Container("high", barrier(10)), gen.Container("mid", barrier(0)))),
		spec: imagesOf("low", "high", "mid"),
		want: [][]string{{"high"}, {"mid"}, {"low"}},
	}, {
		name: "same priority shares a batch; unprioritised joins the first",
		pod: gen.Pod("web", gen.SetPodContainers(
			gen.Container("a", barrier(1)), gen.Container("b", barrier(1)), gen.Container("c", barrier(0)), gen.Container("free"))),
		spec: imagesOf("a", "b", "c", "free"),
		want: [][]string{{"a", "b", "free"}, {"c"}},
	}, {
		name: "declared env without a barrier (webhook off)",
		pod: gen.Pod("web", gen.SetPodContainers(
			gen.Container("a", priorityEnv("1")), gen.Container("b", priorityEnv("5")), gen.Container("c"))),
		spec: imagesOf("a", "b", "c"),
		want: [][]string{{"b", "c"}, {"a"}},
	}, {
		name: "the barrier wins over the env",
		pod: gen.Pod("web", gen.SetPodContainers(
			gen.Container("a", priorityEnv("1"), barrier(9)), gen.Container("b", priorityEnv("5"), barrier(5)))),
		spec: imagesOf("a", "b"),
		want: [][]string{{"a"}, {"b"}},
	}, {
		name: "Ordered annotation: spec order",
		pod: gen.Pod("web", gen.AddPodAnnotations(map[string]string{launchbarrier.AnnotationPriority: launchbarrier.OrderedValue}),
			gen.SetPodContainers(gen.Container("first"), gen.Container("second"))),
		spec: imagesOf("first", "second"),
		want: [][]string{{"first"}, {"second"}},
	}, {
		name: "a malformed declaration declares nothing",
		pod: gen.Pod("web", gen.SetPodContainers(
			gen.Container("a", priorityEnv("x")), gen.Container("b", priorityEnv("5")))),
		spec: imagesOf("a", "b"),
		want: [][]string{{"a", "b"}},
	}, {
		name: "untouched containers are left out",
		pod:  gen.Pod("web", gen.SetPodContainers(gen.Container("a", barrier(1)), gen.Container("b", barrier(0)))),
		spec: imagesOf("b"),
		want: [][]string{{"b"}},
	}, {
		name: "native sidecars join the first batch",
		pod: gen.Pod("web", gen.AddPodInitContainer(gen.Container("proxy")),
			gen.SetPodContainers(gen.Container("a", barrier(1)), gen.Container("b", barrier(0)))),
		spec: imagesOf("proxy", "b"),
		want: [][]string{{"b", "proxy"}},
	}, {
		name: "a shared changed key pulls a later container forward, transitively",
		pod: gen.Pod("web", gen.SetPodContainers(
			gen.Container("a", barrier(3)), gen.Container("b", barrier(2)), gen.Container("c", barrier(1)), gen.Container("d", barrier(0)))),
		spec: specWith(func(s *Spec) {
			s.ContainerImages["a"] = "a:2"
			s.ContainerImages["d"] = "d:2"
			s.ContainerRefMetadata["a"] = metav1.ObjectMeta{Labels: map[string]string{"zone": "b"}}
			s.ContainerRefMetadata["c"] = metav1.ObjectMeta{Labels: map[string]string{"zone": "b"}, Annotations: map[string]string{"owner": "x"}}
			s.ContainerRefMetadata["b"] = metav1.ObjectMeta{Annotations: map[string]string{"owner": "x"}}
		}),
		want: [][]string{{"a", "b", "c"}, {"d"}},
	}, {
		name: "nothing touched",
		pod:  gen.Pod("web", gen.SetPodContainers(gen.Container("a"))),
		spec: newSpec(),
		want: nil,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Batches(tc.pod, tc.spec))
		})
	}
}
