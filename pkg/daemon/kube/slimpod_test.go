package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// What the readers need is covered by their own tests (they run on slimmed
// pods); this one checks that the bulk really goes.
func TestSlimPodDropsWhatNoReaderUses(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "u", ResourceVersion: "7",
			Labels:        map[string]string{"app": "x"},
			Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: corev1.PodSpec{
			NodeName:       "n",
			Volumes:        []corev1.Volume{{Name: "v"}},
			InitContainers: []corev1.Container{{Name: "init"}},
			Containers: []corev1.Container{{
				Name: "main", Image: "img", Command: []string{"run"}, Args: []string{"--x"},
				Env:            []corev1.EnvVar{{Name: "A", Value: "b"}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "v", MountPath: "/v"}},
				ReadinessProbe: &corev1.Probe{},
				Lifecycle:      &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{}, PreStop: &corev1.LifecycleHandler{}},
			}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.1", HostIP: "192.0.2.1",
			PodIPs:            []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", ContainerID: "c://1", Image: "img", ImageID: "sha256:x", Ready: true}},
		},
	}
	out, err := SlimPod(pod)
	require.NoError(t, err)
	got := out.(*corev1.Pod)

	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", ResourceVersion: "7", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{
			NodeName: "n",
			Containers: []corev1.Container{{
				Name: "main", Image: "img", Command: []string{"run"},
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}},
			}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			PodIPs:            []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main", ContainerID: "c://1", Ready: true}},
		},
	}
	assert.Equal(t, want, got)
}

func TestSlimPodLeavesOtherObjects(t *testing.T) {
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: &corev1.Pod{}}
	out, err := SlimPod(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, out)
}

// The env-from-metadata restarter reads the in-place update state and the
// env vars filled from labels and annotations; only those, and only the
// annotations they read, stay.
func TestSlimPodKeepsEnvFromMetadata(t *testing.T) {
	ref := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Labels: map[string]string{"track": "stable"},
			Annotations: map[string]string{
				"apps.kruise.io/inplace-update-state": `{"updateEnvFromMetadata":true}`,
				"owner":                               "team-a",
				"unread":                              "big",
			},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "main", Env: []corev1.EnvVar{
				{Name: "PLAIN", Value: "x"},
				ref("TRACK", "metadata.labels['track']"),
				ref("OWNER", "metadata.annotations['owner']"),
				ref("POD", "metadata.name"),
			}},
			{Name: "side", Env: []corev1.EnvVar{{Name: "PLAIN", Value: "y"}}},
		}},
	}
	out, err := SlimPod(pod)
	require.NoError(t, err)
	got := out.(*corev1.Pod)
	assert.Equal(t, map[string]string{"apps.kruise.io/inplace-update-state": `{"updateEnvFromMetadata":true}`, "owner": "team-a"},
		got.Annotations)
	assert.Equal(t, []corev1.EnvVar{ref("TRACK", "metadata.labels['track']"), ref("OWNER", "metadata.annotations['owner']")},
		got.Spec.Containers[0].Env)
	assert.Nil(t, got.Spec.Containers[1].Env)
}
