//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// resourcesPolicy: two sidecars of one SidecarSet get resources computed from the pod's two app
// containers, one from their sum, one from the largest; the pod runs with them. A pod with no
// container the policy reads is refused, the message naming the SidecarSet and the sidecar.
func TestSidecarSetResourcesPolicy(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	ctx := framework.Context(t, 4*time.Minute)
	ns := f.NewNamespace(ctx, t, "sidecarset-resources")
	name := "resources-" + rand.String(5)
	podLabels := map[string]string{"app": "web", "sidecarset": name}
	sleeper := []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}
	sidecar := func(container string, p *appsv1beta1.ResourcesPolicy) appsv1beta1.SidecarContainer {
		return appsv1beta1.SidecarContainer{
			Container:       corev1.Container{Name: container, Image: f.Image("public/busybox:1.35"), Command: sleeper},
			ResourcesPolicy: p,
		}
	}
	createSidecarSet(ctx, t, f, &appsv1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"sidecarset": name}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			Containers: []appsv1beta1.SidecarContainer{
				sidecar("sum-agent", &appsv1beta1.ResourcesPolicy{
					TargetContainersMode: appsv1beta1.TargetContainersModeSum, TargetContainersNameRegex: "^app-",
					ResourcesExpr: appsv1beta1.ResourcesExpr{
						Limits:   &appsv1beta1.ResourceExprLimits{CPU: "cpu*50%", Memory: "memory*50%"},
						Requests: &appsv1beta1.ResourceExprRequests{CPU: "cpu*50%", Memory: "max(memory*50%, 16Mi)"},
					},
				}),
				sidecar("max-agent", &appsv1beta1.ResourcesPolicy{
					TargetContainersMode: appsv1beta1.TargetContainersModeMax, TargetContainersNameRegex: "^app-",
					ResourcesExpr: appsv1beta1.ResourcesExpr{
						Limits:   &appsv1beta1.ResourceExprLimits{CPU: "max(cpu*50%, 100m)", Memory: "memory*50%"},
						Requests: &appsv1beta1.ResourceExprRequests{CPU: "cpu*50%", Memory: "memory*50%"},
					},
				}),
			},
		},
	})
	waitScoped(ctx, t, f, ns)

	app := func(container, limitCPU, limitMem, reqCPU, reqMem string) corev1.Container {
		return corev1.Container{
			Name: container, Image: f.Image("public/busybox:1.35"), Command: sleeper,
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limitCPU), corev1.ResourceMemory: resource.MustParse(limitMem)},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(reqCPU), corev1.ResourceMemory: resource.MustParse(reqMem)},
			},
		}
	}
	d := deployment(ns, "web", podLabels, app("app-a", "200m", "64Mi", "100m", "32Mi"), app("app-b", "300m", "128Mi", "50m", "64Mi"))
	if _, err := f.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Deployment: %v", err)
	}
	pod := onlyPod(ctx, t, f, ns, podLabels)

	for _, want := range []struct {
		container                                  string
		limitCPU, limitMem, requestCPU, requestMem string
	}{
		// Sums: limits 500m/192Mi, requests 150m/96Mi.
		{"sum-agent", "250m", "96Mi", "75m", "48Mi"},
		// Largest: limits 300m/128Mi, requests 100m/64Mi.
		{"max-agent", "150m", "64Mi", "50m", "32Mi"},
	} {
		c := framework.ContainerSpecOf(pod, want.container)
		if c == nil {
			t.Errorf("no container %s in the pod: %v", want.container, containerNames(pod.Spec.Containers))
			continue
		}
		got := []string{quantityOf(c.Resources.Limits, corev1.ResourceCPU), quantityOf(c.Resources.Limits, corev1.ResourceMemory),
			quantityOf(c.Resources.Requests, corev1.ResourceCPU), quantityOf(c.Resources.Requests, corev1.ResourceMemory)}
		wanted := []string{want.limitCPU, want.limitMem, want.requestCPU, want.requestMem}
		if strings.Join(got, " ") != strings.Join(wanted, " ") {
			t.Errorf("%s limits cpu/memory, requests cpu/memory = %v, want %v", want.container, got, wanted)
		}
	}

	bare := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "no-target", Namespace: ns, Labels: podLabels},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "web", Image: f.Image("public/busybox:1.35"), Command: sleeper}}},
	}
	_, err := f.Client.CoreV1().Pods(ns).Create(ctx, bare, metav1.CreateOptions{})
	if err == nil {
		t.Fatalf("a pod without a container matching ^app- was admitted")
	}
	for _, part := range []string{"SidecarSet " + name, "container sum-agent", `targetContainersNameRegex "^app-"`} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("the refusal %q does not say %q", err.Error(), part)
		}
	}
}

func quantityOf(l corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := l[name]
	if !ok {
		return "unset"
	}
	return q.String()
}
