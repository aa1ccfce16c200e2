package sidecarrules

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func withResourcesPolicy(p *appsv1beta1.ResourcesPolicy) func(*appsv1beta1.SidecarContainer) {
	return func(c *appsv1beta1.SidecarContainer) { c.ResourcesPolicy = p }
}

func withNativeSidecar(name string, mods ...func(*appsv1beta1.SidecarContainer)) func(*appsv1beta1.SidecarSet) {
	return func(ss *appsv1beta1.SidecarSet) {
		c := appsv1beta1.SidecarContainer{Container: corev1.Container{Name: name, Image: name + ":1"}}
		native(&c)
		for _, m := range mods {
			m(&c)
		}
		ss.Spec.InitContainers = append(ss.Spec.InitContainers, c)
	}
}

func TestInjectComputesPolicyResources(t *testing.T) {
	pod := appPod(func(p *corev1.Pod) {
		p.Spec.Containers = []corev1.Container{sized("main", "1/1Gi", "500m/512Mi"), sized("worker", "3/1Gi", "500m/512Mi"),
			// The pod's own container of a sidecar's name is replaced by the sidecar: no target.
			sized("log", "8/8Gi", "8/8Gi")}
	})
	quarter := resourcesPolicy(appsv1beta1.TargetContainersModeSum, ".*",
		&appsv1beta1.ResourceExprLimits{CPU: "cpu*25%", Memory: "memory*25%"},
		&appsv1beta1.ResourceExprRequests{CPU: "cpu*10%", Memory: "100Mi"})
	biggest := resourcesPolicy(appsv1beta1.TargetContainersModeMax, ".*",
		&appsv1beta1.ResourceExprLimits{CPU: "cpu", Memory: "memory"}, nil)
	sets := []*appsv1beta1.SidecarSet{
		set("mesh", withContainer("proxy", withResourcesPolicy(quarter)), withNativeSidecar("agent", withResourcesPolicy(biggest))),
		set("logs", withContainer("log", func(c *appsv1beta1.SidecarContainer) {
			c.Resources.Limits = resourceList("9/9Gi")
		})),
	}
	before := sets[0].DeepCopy()

	out, err := Inject(pod, "ns", sets, injectedAt, InjectOptions{})
	require.NoError(t, err)

	proxy := container(out.Spec.Containers, "proxy")
	assert.Equal(t, "1/512Mi", render(proxy.Resources.Limits), "sum of limits 4/2Gi, a quarter")
	assert.Equal(t, "100m/100Mi", render(proxy.Resources.Requests))
	agent := container(out.Spec.InitContainers, "agent")
	assert.Equal(t, "3/1Gi", render(agent.Resources.Limits), "the largest limits")
	assert.Nil(t, agent.Resources.Requests)
	assert.Equal(t, "9/9Gi", render(container(out.Spec.Containers, "log").Resources.Limits), "a sidecar without a policy keeps its resources")
	assert.Equal(t, before, sets[0], "the SidecarSet is read, not changed")
}

func TestInjectRefusesUncomputablePolicy(t *testing.T) {
	pod := appPod(func(p *corev1.Pod) { p.Spec.Containers = []corev1.Container{sized("main", "1/1Gi", "")} })
	sets := []*appsv1beta1.SidecarSet{set("mesh", withContainer("proxy", withResourcesPolicy(
		resourcesPolicy(appsv1beta1.TargetContainersModeSum, "^app$", &appsv1beta1.ResourceExprLimits{CPU: "cpu"}, nil))))}

	_, err := Inject(pod, "ns", sets, injectedAt, InjectOptions{})

	var r *Refusal
	require.True(t, errors.As(err, &r), "error %v is not a refusal", err)
	assert.Equal(t, ReasonResourcesPolicy, r.Reason)
	assert.Equal(t, `pod ns/web-*: SidecarSet mesh, container proxy: resourcesPolicy: no container of the pod (main) matches targetContainersNameRegex "^app$"`, r.Message)
}
