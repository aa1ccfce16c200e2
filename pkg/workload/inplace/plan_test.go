package inplace

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/test/unit/gen"
)

func res(cpu, mem string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

// template is a workload template with an app container and a log container reading the
// label "zone" and the annotation "owner" as env, and a native sidecar "proxy".
func template(mods ...gen.PodModifier) *corev1.PodTemplateSpec {
	base := []gen.PodModifier{
		gen.AddPodLabels(map[string]string{"app": "web", "zone": "a"}),
		gen.AddPodAnnotations(map[string]string{"owner": "team-a", "note": "x"}),
		gen.AddPodInitContainer(gen.Container("proxy", gen.SetContainerImage("proxy:1"),
			gen.SetContainerRestartPolicy(corev1.ContainerRestartPolicyAlways))),
		gen.AddPodInitContainer(gen.Container("setup", gen.SetContainerImage("setup:1"))),
		gen.AddPodContainer(gen.Container("app", gen.SetContainerImage("app:1"),
			gen.SetContainerResources(res("1", "1Gi"), res("2", "2Gi")))),
		gen.AddPodContainer(gen.Container("log", gen.SetContainerImage("log:1"),
			gen.AddContainerEnvFromField("ZONE", "metadata.labels['zone']"),
			gen.AddContainerEnvFromField("OWNER", "metadata.annotations['owner']"))),
	}
	return gen.PodTemplate(append(base, mods...)...)
}

// change is a modifier of a built template.
type change func(*corev1.PodTemplateSpec)

func containerNamed(t *corev1.PodTemplateSpec, name string) *corev1.Container {
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].Name == name {
			return &t.Spec.Containers[i]
		}
	}
	for i := range t.Spec.InitContainers {
		if t.Spec.InitContainers[i].Name == name {
			return &t.Spec.InitContainers[i]
		}
	}
	return nil
}

func TestPlan(t *testing.T) {
	all := Options{NativeSidecarImages: true, Resize: true}
	cases := []struct {
		name   string
		opts   Options
		change change
		want   *Spec
		reason string
	}{{
		name:   "nothing changes",
		change: func(*corev1.PodTemplateSpec) {},
		want:   newSpec(),
	}, {
		name:   "image of a regular container",
		change: func(t *corev1.PodTemplateSpec) { containerNamed(t, "app").Image = "app:2" },
		want:   specWith(func(s *Spec) { s.ContainerImages["app"] = "app:2" }),
	}, {
		name:   "image of a native sidecar when asked",
		opts:   all,
		change: func(t *corev1.PodTemplateSpec) { containerNamed(t, "proxy").Image = "proxy:2" },
		want:   specWith(func(s *Spec) { s.ContainerImages["proxy"] = "proxy:2" }),
	}, {
		name:   "image of a native sidecar when not asked",
		change: func(t *corev1.PodTemplateSpec) { containerNamed(t, "proxy").Image = "proxy:2" },
		reason: "spec.initContainers[proxy].image changed",
	}, {
		name:   "image of a plain init container",
		opts:   all,
		change: func(t *corev1.PodTemplateSpec) { containerNamed(t, "setup").Image = "setup:2" },
		reason: "spec.initContainers[setup].image changed",
	}, {
		name: "env value",
		opts: all,
		change: func(t *corev1.PodTemplateSpec) {
			containerNamed(t, "app").Env = []corev1.EnvVar{{Name: "X", Value: "1"}}
		},
		reason: "spec.containers[app].env changed",
	}, {
		name:   "command",
		change: func(t *corev1.PodTemplateSpec) { containerNamed(t, "log").Command = []string{"sh"} },
		reason: "spec.containers[log].command changed",
	}, {
		name: "image and a probe: the first differing field is named",
		change: func(t *corev1.PodTemplateSpec) {
			containerNamed(t, "app").Image = "app:2"
			containerNamed(t, "app").ReadinessProbe = &corev1.Probe{InitialDelaySeconds: 1}
		},
		reason: "spec.containers[app].readinessProbe changed",
	}, {
		name: "volumes",
		change: func(t *corev1.PodTemplateSpec) {
			t.Spec.Volumes = []corev1.Volume{{Name: "v"}}
		},
		reason: "spec.volumes changed",
	}, {
		name: "a container added",
		change: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers = append(t.Spec.Containers, gen.Container("new"))
		},
		reason: "spec.containers: 3 containers instead of 2",
	}, {
		name: "containers reordered",
		change: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0], t.Spec.Containers[1] = t.Spec.Containers[1], t.Spec.Containers[0]
		},
		reason: `spec.containers: container "log" in place of "app"`,
	}, {
		name: "nil and empty are alike",
		change: func(t *corev1.PodTemplateSpec) {
			containerNamed(t, "app").Env = []corev1.EnvVar{}
			t.Spec.Volumes = []corev1.Volume{}
		},
		want: newSpec(),
	}, {
		name: "the same quantity written differently",
		opts: all,
		change: func(t *corev1.PodTemplateSpec) {
			containerNamed(t, "app").Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000m")
		},
		want: newSpec(),
	}, {
		name: "plain labels and annotations",
		change: func(t *corev1.PodTemplateSpec) {
			t.Labels["tier"] = "front"
			t.Labels["app"] = "web2"
			delete(t.Annotations, "note")
		},
		want: specWith(func(s *Spec) {
			s.Metadata = MetadataPatch{Labels: map[string]string{"app": "web2", "tier": "front"}, RemovedAnnotations: []string{"note"}}
		}),
	}, {
		name: "a label read as env restarts its reader",
		change: func(t *corev1.PodTemplateSpec) {
			t.Labels["zone"] = "b"
			t.Annotations["owner"] = "team-b"
		},
		want: specWith(func(s *Spec) {
			s.ContainerRefMetadata["log"] = metav1.ObjectMeta{Labels: map[string]string{"zone": "b"}, Annotations: map[string]string{"owner": "team-b"}}
		}),
	}, {
		name:   "a label read as env removed",
		change: func(t *corev1.PodTemplateSpec) { delete(t.Labels, "zone") },
		reason: "metadata.labels['zone']: removed, but container log reads it as env",
	}, {
		name:   "other metadata",
		change: func(t *corev1.PodTemplateSpec) { t.Finalizers = []string{"x"} },
		reason: "metadata.finalizers changed",
	}, {
		name: "cpu and memory resized",
		opts: all,
		change: func(t *corev1.PodTemplateSpec) {
			containerNamed(t, "app").Resources = corev1.ResourceRequirements{Requests: res("2", "1Gi"), Limits: res("4", "3Gi")}
		},
		want: specWith(func(s *Spec) {
			s.ContainerResources["app"] = corev1.ResourceRequirements{Requests: res("2", "1Gi"), Limits: res("4", "3Gi")}
		}),
	}, {
		name: "resources without the resize option",
		change: func(t *corev1.PodTemplateSpec) {
			containerNamed(t, "app").Resources.Limits = res("4", "2Gi")
		},
		reason: "spec.containers[app].resources changed",
	}, {
		name: "resources on an API server that cannot resize pods",
		opts: all.WithoutResize(ResizeNotServed),
		change: func(t *corev1.PodTemplateSpec) {
			containerNamed(t, "app").Resources.Limits = res("4", "2Gi")
		},
		reason: "spec.containers[app].resources: " + ResizeNotServed,
	}, {
		name: "resources with no reason against resizing",
		opts: all.WithoutResize(""),
		change: func(t *corev1.PodTemplateSpec) {
			containerNamed(t, "app").Resources.Limits = res("4", "2Gi")
		},
		want: specWith(func(s *Spec) {
			s.ContainerResources["app"] = corev1.ResourceRequirements{Requests: res("1", "1Gi"), Limits: res("4", "2Gi")}
		}),
	}, {
		name: "an image change on an API server that cannot resize pods",
		opts: all.WithoutResize(ResizeNotServed),
		change: func(t *corev1.PodTemplateSpec) {
			containerNamed(t, "app").Image = "app:2"
			containerNamed(t, "proxy").Image = "proxy:2"
		},
		want: specWith(func(s *Spec) {
			s.ContainerImages["app"] = "app:2"
			s.ContainerImages["proxy"] = "proxy:2"
		}),
	}, {
		name: "a resource name added",
		opts: all,
		change: func(t *corev1.PodTemplateSpec) {
			containerNamed(t, "log").Resources.Requests = res("1", "")
		},
		reason: "spec.containers[log].resources.requests: resource names added or removed",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := template()
			new := template()
			tc.change(new)
			got, err := Plan(old, new, tc.opts)
			if tc.reason != "" {
				require.Error(t, err)
				assert.True(t, IsNotInPlace(err))
				assert.Equal(t, tc.reason, err.Error())
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func specWith(f func(*Spec)) *Spec {
	s := newSpec()
	f(s)
	return s
}

// An init container cannot be restarted for a new value of a label it reads.
func TestPlanRefusesMetadataReadByInitContainer(t *testing.T) {
	readsZone := func(p *corev1.Pod) {
		c := &p.Spec.InitContainers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "Z", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['zone']"}}})
	}
	old, new := template(readsZone), template(readsZone)
	new.Labels["zone"] = "b"
	_, err := Plan(old, new, Options{NativeSidecarImages: true})
	require.Error(t, err)
	assert.Equal(t, "spec.initContainers[proxy].env: reads metadata.labels['zone'], which changes, and an init container cannot be restarted", err.Error())
}

// SidecarSet's version env vars never make a container restart.
func TestPlanIgnoresSidecarSetVersionEnv(t *testing.T) {
	mod := gen.AddPodContainer(gen.Container("sidecar", gen.AddContainerEnvFromField("SIDECARSET_VERSION", "metadata.annotations['v']")))
	old, new := template(mod), template(mod)
	new.Annotations["v"] = "2"
	got, err := Plan(old, new, Options{})
	require.NoError(t, err)
	assert.Equal(t, specWith(func(s *Spec) { s.Metadata.Annotations = map[string]string{"v": "2"} }), got)
}

func TestPlanRefusesOtherResources(t *testing.T) {
	withStorage := func(storage string) gen.PodModifier {
		return func(p *corev1.Pod) {
			l := res("1", "1Gi")
			l[corev1.ResourceEphemeralStorage] = resource.MustParse(storage)
			p.Spec.Containers = []corev1.Container{gen.Container("app", gen.SetContainerResources(l, nil))}
		}
	}
	_, err := Plan(gen.PodTemplate(withStorage("1Gi")), gen.PodTemplate(withStorage("2Gi")), Options{Resize: true})
	require.Error(t, err)
	assert.Equal(t, "spec.containers[app].resources.requests[ephemeral-storage]: only cpu and memory can be resized", err.Error())
}

func TestPlanRefusesQoSChange(t *testing.T) {
	one := func(requests, limits corev1.ResourceList) *corev1.PodTemplateSpec {
		return gen.PodTemplate(gen.AddPodContainer(gen.Container("app", gen.SetContainerResources(requests, limits))))
	}
	cases := []struct {
		name     string
		old, new *corev1.PodTemplateSpec
		reason   string
	}{{
		name:   "Guaranteed to Burstable",
		old:    one(res("1", "1Gi"), res("1", "1Gi")),
		new:    one(res("1", "1Gi"), res("2", "1Gi")),
		reason: "spec.containers[*].resources: the QoS class would change from Guaranteed to Burstable",
	}, {
		name: "Burstable stays Burstable",
		old:  one(res("1", "1Gi"), res("2", "2Gi")),
		new:  one(res("2", "1Gi"), res("3", "2Gi")),
	}, {
		name: "Guaranteed stays Guaranteed",
		old:  one(res("1", "1Gi"), res("1", "1Gi")),
		new:  one(res("2", "2Gi"), res("2", "2Gi")),
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Plan(tc.old, tc.new, Options{Resize: true})
			if tc.reason != "" {
				require.Error(t, err)
				assert.Equal(t, tc.reason, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{"app"}, got.Containers())
		})
	}
}

func TestQoSClass(t *testing.T) {
	spec := func(cs ...corev1.Container) *corev1.PodSpec { return &corev1.PodSpec{Containers: cs} }
	assert.Equal(t, corev1.PodQOSBestEffort, qosClass(spec(gen.Container("a"))))
	// A limit alone is defaulted into the request.
	assert.Equal(t, corev1.PodQOSGuaranteed, qosClass(spec(gen.Container("a", gen.SetContainerResources(nil, res("1", "1Gi"))))))
	// A container without limits makes the pod Burstable.
	assert.Equal(t, corev1.PodQOSBurstable, qosClass(spec(
		gen.Container("a", gen.SetContainerResources(nil, res("1", "1Gi"))),
		gen.Container("b", gen.SetContainerResources(res("1", ""), nil)))))
	// Pod-level resources decide alone.
	s := spec(gen.Container("a"))
	s.Resources = &corev1.ResourceRequirements{Limits: res("1", "1Gi")}
	assert.Equal(t, corev1.PodQOSGuaranteed, qosClass(s))
}

func TestPlanNeedsBothTemplates(t *testing.T) {
	_, err := Plan(nil, template(), Options{})
	require.Error(t, err)
	assert.False(t, IsNotInPlace(err))
}

// Keys kruise writes on pods and decides by are the pod's own: a template that adds or drops one
// changes nothing of a pod in place (a copied apps.kruise.io/specified-delete would delete every
// pod; a dropped inplace-update-state would erase this update's record).
func TestPlanNeverTouchesReservedKeys(t *testing.T) {
	old := template(gen.AddPodAnnotations(map[string]string{"apps.kruise.io/inplace-update-state": "{}"}))
	cur := template(gen.AddPodLabels(map[string]string{"apps.kruise.io/specified-delete": "true", "lifecycle.apps.kruise.io/state": "PreparingDelete"}),
		gen.AddPodAnnotations(map[string]string{"apps.kruise.io/inplace-update-grace": "{}", "note": "y"}))
	containerNamed(cur, "app").Image = "app:2"
	got, err := Plan(old, cur, Options{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"note": "y"}, got.Metadata.Annotations)
	assert.Empty(t, got.Metadata.Labels)
	assert.Empty(t, got.Metadata.RemovedAnnotations, "the pod's own update record is not removed")
	assert.Equal(t, "app:2", got.ContainerImages["app"])
}
