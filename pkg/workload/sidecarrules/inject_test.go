package sidecarrules

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// injectedAt is in time.Local, as metav1.Time reads it back from JSON.
var injectedAt = metav1.NewTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC).Local())

func appPod(mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: "ns", Labels: map[string]string{"app": "web", "role": "main"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "setup", Image: "setup:1"}},
			Containers: []corev1.Container{{
				Name: "main", Image: "main:1",
				Env:          []corev1.EnvVar{{Name: "POD_ID", Value: "7"}, {Name: "ZONE", Value: "z1"}, {Name: "DIR", Value: "d"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "data", MountPath: "/sub", SubPathExpr: "x/$(DIR)"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func set(name string, mods ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
	ss := &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1beta1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status:     appsv1beta1.SidecarSetStatus{LatestRevision: name + "-rev1"},
	}
	for _, m := range mods {
		m(ss)
	}
	return ss
}

func withContainer(name string, mods ...func(*appsv1beta1.SidecarContainer)) func(*appsv1beta1.SidecarSet) {
	return func(ss *appsv1beta1.SidecarSet) {
		c := appsv1beta1.SidecarContainer{Container: corev1.Container{Name: name, Image: name + ":1"}}
		for _, m := range mods {
			m(&c)
		}
		ss.Spec.Containers = append(ss.Spec.Containers, c)
	}
}

func withInit(name string, mods ...func(*appsv1beta1.SidecarContainer)) func(*appsv1beta1.SidecarSet) {
	return func(ss *appsv1beta1.SidecarSet) {
		c := appsv1beta1.SidecarContainer{Container: corev1.Container{Name: name, Image: name + ":1"}}
		for _, m := range mods {
			m(&c)
		}
		ss.Spec.InitContainers = append(ss.Spec.InitContainers, c)
	}
}

func native(c *appsv1beta1.SidecarContainer) {
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
}

func policy(p appsv1beta1.PodInjectPolicyType) func(*appsv1beta1.SidecarContainer) {
	return func(c *appsv1beta1.SidecarContainer) { c.PodInjectPolicy = p }
}

func mount(volume, path string) func(*appsv1beta1.SidecarContainer) {
	return func(c *appsv1beta1.SidecarContainer) {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: path})
	}
}

func withVolume(name, medium string) func(*appsv1beta1.SidecarSet) {
	return func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.Volumes = append(ss.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMedium(medium)}}})
	}
}

func withPatch(p appsv1beta1.SidecarSetPatchPolicyType, annotations map[string]string) func(*appsv1beta1.SidecarSet) {
	return func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.PatchPodMetadata = append(ss.Spec.PatchPodMetadata, appsv1beta1.SidecarSetPatchPodMetadata{PatchPolicy: p, Annotations: annotations})
	}
}

func names(cs []corev1.Container) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}

func container(cs []corev1.Container, name string) corev1.Container {
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	return corev1.Container{}
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

func TestInjectPlacesContainers(t *testing.T) {
	for name, tc := range map[string]struct {
		pod            *corev1.Pod
		sets           []*appsv1beta1.SidecarSet
		wantContainers string
		wantInit       string
	}{
		"containers default before the app, in SidecarSet name order": {
			pod:            appPod(),
			sets:           []*appsv1beta1.SidecarSet{set("b", withContainer("proxy")), set("a", withContainer("log"))},
			wantContainers: "log,proxy,main", wantInit: "setup",
		},
		"AfterAppContainer goes after": {
			pod:            appPod(),
			sets:           []*appsv1beta1.SidecarSet{set("a", withContainer("log", policy(appsv1beta1.AfterAppContainerType)), withContainer("proxy"))},
			wantContainers: "proxy,main,log", wantInit: "setup",
		},
		"init containers after the pod's, sorted by name; BeforeAppContainer first": {
			pod: appPod(),
			sets: []*appsv1beta1.SidecarSet{set("a",
				withInit("zz-native", native), withInit("aa-native", native), withInit("first", policy(appsv1beta1.BeforeAppContainerType)))},
			wantContainers: "main", wantInit: "first,setup,aa-native,zz-native",
		},
		"a container of the same name is replaced where it is": {
			pod: appPod(func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "log", Image: "old"})
			}),
			sets:           []*appsv1beta1.SidecarSet{set("a", withContainer("log"))},
			wantContainers: "main,log", wantInit: "setup",
		},
	} {
		t.Run(name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			got, err := Inject(tc.pod, "ns", tc.sets, injectedAt, InjectOptions{})
			require.NoError(t, err)
			assert.Equal(t, tc.wantContainers, names(got.Spec.Containers))
			assert.Equal(t, tc.wantInit, names(got.Spec.InitContainers))
			assert.Equal(t, before, tc.pod, "Inject changed its argument")
			for _, c := range append(got.Spec.Containers, got.Spec.InitContainers...) {
				if c.Name != "main" && c.Name != "setup" {
					assert.Equal(t, "true", envOf(c)[InjectedEnv], c.Name)
					assert.Equal(t, c.Name+":1", c.Image)
				}
			}
		})
	}
}

func TestInjectRecordsOpenKruiseAnnotations(t *testing.T) {
	pod := appPod(func(p *corev1.Pod) {
		p.Annotations = map[string]string{InjectedListAnnotation: "zeta"}
	})
	a := set("a", withContainer("log"), withInit("mesh", native), withInit("once"))
	empty := set("b", withPatch("", map[string]string{"k": "v"}))
	got, err := Inject(pod, "ns", []*appsv1beta1.SidecarSet{a, empty}, injectedAt, InjectOptions{})
	require.NoError(t, err)

	assert.Equal(t, "a,b,zeta", got.Annotations[InjectedListAnnotation])
	hashes, err := UpgradeSpecs(got, HashAnnotation)
	require.NoError(t, err)
	wantHash, _ := Hash(a)
	require.Contains(t, hashes, "a")
	assert.NotContains(t, hashes, "b", "a SidecarSet that injected no container has no hash")
	assert.Equal(t, UpgradeSpec{UpdateTimestamp: injectedAt, Hash: wantHash, SidecarSetName: "a",
		SidecarList: []string{"log", "mesh"}, ControllerRevision: "a-rev1"}, hashes["a"])
	withoutImage, err := UpgradeSpecs(got, HashWithoutImageAnnotation)
	require.NoError(t, err)
	wantWithout, _ := HashWithoutImage(a)
	assert.Equal(t, UpgradeSpec{UpdateTimestamp: injectedAt, Hash: wantWithout, SidecarSetName: "a",
		SidecarList: []string{"log", "mesh"}}, withoutImage["a"])

	// The JSON keys are OpenKruise's.
	var raw map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.Annotations[HashAnnotation]), &raw))
	for _, key := range []string{"updateTimestamp", "hash", "sidecarSetName", "sidecarList", "controllerRevision"} {
		assert.Contains(t, raw["a"], key)
	}
}

func TestInjectMergesVolumesAndSecrets(t *testing.T) {
	pod := appPod(func(p *corev1.Pod) {
		p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "app"}}
	})
	a := set("a", withVolume("logs", ""), withVolume("unused", ""), withVolume("data", "Memory"),
		withContainer("log", mount("logs", "/logs"), mount("data", "/d")),
		func(ss *appsv1beta1.SidecarSet) {
			ss.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "app"}, {Name: "sidecar"}}
		})
	b := set("b", withVolume("logs", ""), withContainer("proxy", mount("logs", "/logs")))
	got, err := Inject(pod, "ns", []*appsv1beta1.SidecarSet{a, b}, injectedAt, InjectOptions{})
	require.NoError(t, err)
	require.Len(t, got.Spec.Volumes, 2, "same volume from two SidecarSets once, the unused one not at all")
	assert.Equal(t, "logs", got.Spec.Volumes[1].Name)
	assert.Equal(t, corev1.StorageMedium(""), got.Spec.Volumes[0].EmptyDir.Medium, "the pod's own data volume wins")
	assert.Equal(t, []corev1.LocalObjectReference{{Name: "app"}, {Name: "sidecar"}}, got.Spec.ImagePullSecrets)
}

func TestInjectRefusesConflicts(t *testing.T) {
	for name, tc := range map[string]struct {
		sets       []*appsv1beta1.SidecarSet
		wantReason RefusalReason
		wantText   []string
	}{
		"same container name": {
			sets:       []*appsv1beta1.SidecarSet{set("a", withContainer("log")), set("b", withContainer("log"))},
			wantReason: ReasonContainerConflict, wantText: []string{"SidecarSets a and b", `"log"`, "ns/web-*"},
		},
		"container and init container of the same name": {
			sets:       []*appsv1beta1.SidecarSet{set("a", withInit("log", native)), set("b", withContainer("log"))},
			wantReason: ReasonContainerConflict, wantText: []string{"SidecarSets a and b"},
		},
		"volume of the same name, different content": {
			sets: []*appsv1beta1.SidecarSet{
				set("a", withVolume("logs", ""), withContainer("x", mount("logs", "/l"))),
				set("b", withVolume("logs", "Memory"), withContainer("y", mount("logs", "/l"))),
			},
			wantReason: ReasonVolumeConflict, wantText: []string{"SidecarSets a and b", `"logs"`},
		},
		"overwrite of the same annotation": {
			sets: []*appsv1beta1.SidecarSet{
				set("a", withPatch(appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{"k": "1"})),
				set("b", withPatch(appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{"k": "2"})),
			},
			wantReason: ReasonAnnotationConflict, wantText: []string{"SidecarSets a and b", `"k"`},
		},
		"merge patch on an annotation that is not JSON": {
			sets: []*appsv1beta1.SidecarSet{
				set("a", withPatch(appsv1beta1.SidecarSetMergePatchJsonPatchPolicy, map[string]string{"plain": `{"a":1}`})),
			},
			wantReason: ReasonInvalidPatch, wantText: []string{"SidecarSet a", `"plain"`},
		},
	} {
		t.Run(name, func(t *testing.T) {
			pod := appPod(func(p *corev1.Pod) { p.Annotations = map[string]string{"plain": "text"} })
			_, err := Inject(pod, "ns", tc.sets, injectedAt, InjectOptions{})
			var r *Refusal
			require.True(t, errors.As(err, &r), "error %v is not a refusal", err)
			assert.Equal(t, tc.wantReason, r.Reason)
			for _, s := range tc.wantText {
				assert.Contains(t, r.Message, s)
			}
		})
	}
}

func TestInjectTransfersEnvAndSharesMounts(t *testing.T) {
	pod := appPod(func(p *corev1.Pod) {
		p.Labels["sidecar-source"] = "main"
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: "old-sidecar", Env: []corev1.EnvVar{{Name: InjectedEnv, Value: "true"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "x", MountPath: "/not-shared"}},
		})
	})
	a := set("a",
		withContainer("plain", func(c *appsv1beta1.SidecarContainer) {
			c.TransferEnv = []appsv1beta1.TransferEnvVar{{SourceContainerName: "main", EnvName: "POD_ID"}, {SourceContainerName: "gone", EnvName: "X"}}
			c.Env = []corev1.EnvVar{{Name: "POD_ID", Value: "own"}, {Name: "EXTRA", Value: "e"}}
		}),
		withContainer("fromlabel", func(c *appsv1beta1.SidecarContainer) {
			c.TransferEnv = []appsv1beta1.TransferEnvVar{{
				SourceContainerNameFrom: &appsv1beta1.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['sidecar-source']"}},
				EnvNames:                []string{"ZONE", "POD_ID", "MISSING"},
			}}
		}),
		withContainer("shared", mount("own", "/data"), func(c *appsv1beta1.SidecarContainer) {
			c.ShareVolumePolicy.Type = appsv1beta1.ShareVolumePolicyEnabled
		}),
	)
	got, err := Inject(pod, "ns", []*appsv1beta1.SidecarSet{a}, injectedAt, InjectOptions{})
	require.NoError(t, err)

	assert.Equal(t, map[string]string{"POD_ID": "own", "EXTRA": "e", InjectedEnv: "true"}, envOf(container(got.Spec.Containers, "plain")),
		"the sidecar's own env wins over a transferred one")
	assert.Equal(t, map[string]string{"POD_ID": "7", "ZONE": "z1", InjectedEnv: "true"}, envOf(container(got.Spec.Containers, "fromlabel")))
	shared := container(got.Spec.Containers, "shared")
	assert.Equal(t, []corev1.VolumeMount{{Name: "own", MountPath: "/data"}, {Name: "data", MountPath: "/sub", SubPathExpr: "x/$(DIR)"}},
		shared.VolumeMounts, "the app's mounts at paths the sidecar does not use, not an injected container's")
	assert.Equal(t, "d", envOf(shared)["DIR"], "a subPathExpr's variable comes along")
	assert.Empty(t, container(got.Spec.Containers, "plain").VolumeMounts, "sharing is off by default")
}

func TestInjectPatchesPodMetadata(t *testing.T) {
	pod := appPod(func(p *corev1.Pod) {
		p.Annotations = map[string]string{"kept": "pod", "over": "pod", "json": `{"a":1,"b":2}`}
	})
	a := set("a",
		withPatch(appsv1beta1.SidecarSetRetainPatchPolicy, map[string]string{"kept": "ss", "new": "ss"}),
		withPatch(appsv1beta1.SidecarSetOverwritePatchPolicy, map[string]string{"over": "ss"}),
		withPatch(appsv1beta1.SidecarSetMergePatchJsonPatchPolicy, map[string]string{"json": `{"b":3,"c":4}`, "fresh": `{"x":1}`}),
	)
	got, err := Inject(pod, "ns", []*appsv1beta1.SidecarSet{a}, injectedAt, InjectOptions{})
	require.NoError(t, err)
	assert.Equal(t, "pod", got.Annotations["kept"])
	assert.Equal(t, "ss", got.Annotations["new"])
	assert.Equal(t, "ss", got.Annotations["over"])
	assert.JSONEq(t, `{"a":1,"b":3,"c":4}`, got.Annotations["json"])
	assert.Equal(t, `{"x":1}`, got.Annotations["fresh"])
}

func TestInjectNothing(t *testing.T) {
	pod := appPod()
	got, err := Inject(pod, "ns", nil, injectedAt, InjectOptions{})
	require.NoError(t, err)
	assert.Equal(t, pod, got)
}

// Gate EnableSortSidecarContainerByName: the injected containers are ordered by name across the
// SidecarSets, then placed before or after the pod's own by their policy; off, they keep the
// SidecarSets' order (by name) and each SidecarSet's own order.
func TestInjectSortsContainersByName(t *testing.T) {
	sets := func() []*appsv1beta1.SidecarSet {
		return []*appsv1beta1.SidecarSet{
			set("a", withContainer("zipkin"), withContainer("proxy"), withContainer("tail", policy(appsv1beta1.AfterAppContainerType)),
				withContainer("audit", policy(appsv1beta1.AfterAppContainerType))),
			set("b", withContainer("envoy")),
		}
	}
	for name, tc := range map[string]struct {
		opts InjectOptions
		want string
	}{
		"gate off: SidecarSet then declaration order": {InjectOptions{}, "zipkin,proxy,envoy,main,tail,audit"},
		"gate on: by name":                            {InjectOptions{SortContainersByName: true}, "envoy,proxy,zipkin,main,audit,tail"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Inject(appPod(), "ns", sets(), injectedAt, tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, names(got.Spec.Containers))
			assert.Equal(t, "setup", names(got.Spec.InitContainers))
		})
	}
}
