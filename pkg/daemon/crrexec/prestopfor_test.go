package crrexec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/daemon/kube"
)

func TestPreStopFor(t *testing.T) {
	sleep := &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 3}}
	podExec := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"pod-hook"}}}
	podPorts := []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	// As the daemon's pod cache holds it (kube.SlimPod).
	pod := func(h *corev1.LifecycleHandler) *corev1.Pod {
		slim, err := kube.SlimPod(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "other", Lifecycle: &corev1.Lifecycle{PreStop: podExec}},
			{Name: "main", Ports: podPorts, Lifecycle: &corev1.Lifecycle{PreStop: h}},
		}}})
		require.NoError(t, err)
		return slim.(*corev1.Pod)
	}
	crrCopy := appsv1alpha1.ContainerRecreateRequestContainer{
		Name:    "main",
		PreStop: &appsv1alpha1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"crr-hook"}}},
		Ports:   []corev1.ContainerPort{{Name: "web", ContainerPort: 9090}},
	}
	bare := appsv1alpha1.ContainerRecreateRequestContainer{Name: "main"}

	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		ctr       appsv1alpha1.ContainerRecreateRequestContainer
		want      *corev1.LifecycleHandler
		wantPorts []corev1.ContainerPort
	}{
		// A copy in the CRR (its creator's, in an earlier release or without
		// the admission policy) never runs: a CRR is no exec API.
		{name: "the pod's own hook runs, never the CRR's copy", pod: pod(sleep), ctr: crrCopy, want: sleep, wantPorts: podPorts},
		{name: "the CRR's copy does not run where the pod has no hook", pod: pod(nil), ctr: crrCopy},
		{name: "no hook in the CRR: the pod's sleep hook runs", pod: pod(sleep), ctr: bare, want: sleep, wantPorts: podPorts},
		{name: "another container's hook is not used", pod: pod(nil), ctr: bare},
		{name: "the CRR names a container the pod lacks", pod: pod(sleep), ctr: appsv1alpha1.ContainerRecreateRequestContainer{Name: "gone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ports := preStopFor(tc.pod, tc.ctr)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantPorts, ports)
		})
	}
}
