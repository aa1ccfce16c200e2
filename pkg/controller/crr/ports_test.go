package crr

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// manyPorts is n ports named p0, p1, ... on 1000, 1001, ...
func manyPorts(n int) []corev1.ContainerPort {
	out := make([]corev1.ContainerPort, n)
	for i := range out {
		out[i] = corev1.ContainerPort{Name: fmt.Sprintf("p%d", i), ContainerPort: int32(1000 + i), Protocol: corev1.ProtocolTCP}
	}
	return out
}

// A pod's container may declare more ports than a request holds (a pod has
// no such bound, and OpenKruise admits a request for it). Admission still
// succeeds: of such a container, only the ports its httpGet preStop hook
// names are copied (the copy is informational).
func TestAdmitCopiesAtMostTheBoundOfPorts(t *testing.T) {
	httpGet := func(port intstr.IntOrString) *corev1.Lifecycle {
		return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/drain", Port: port}}}
	}
	for _, tc := range []struct {
		name      string
		ports     []corev1.ContainerPort
		lifecycle *corev1.Lifecycle
		want      []corev1.ContainerPort
	}{
		{"at the bound, all", manyPorts(appsv1alpha1.MaxPortsPerContainer), nil, manyPorts(appsv1alpha1.MaxPortsPerContainer)},
		{"over the bound, the named port of the hook", manyPorts(300), httpGet(intstr.FromString("p250")), manyPorts(300)[250:251]},
		{"over the bound, the numbered port of the hook", manyPorts(300), httpGet(intstr.FromInt32(1007)), manyPorts(300)[7:8]},
		{"over the bound, a hook naming no port of the container", manyPorts(300), httpGet(intstr.FromInt32(8080)), nil},
		{"over the bound, an exec hook", manyPorts(300),
			&corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}, nil},
		{"over the bound, no hook", manyPorts(300), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := runningPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = tc.ports
				p.Spec.Containers[0].Lifecycle = tc.lifecycle
			})
			f := newFixture(t, objects{apiOnly: []*corev1.Pod{pod}, crrs: []*appsv1alpha1.ContainerRecreateRequest{newCRR(time.Second, "main")}})
			_, err := f.sync(t)
			require.NoError(t, err)
			got := f.getCRR(t)
			require.True(t, appsv1alpha1.IsRouted(got), "admitted")
			assert.Equal(t, tc.want, got.Spec.Containers[0].Ports)
			assert.LessOrEqual(t, len(got.Spec.Containers[0].Ports), appsv1alpha1.MaxPortsPerContainer)
		})
	}
}
