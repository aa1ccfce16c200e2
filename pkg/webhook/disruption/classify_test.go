package disruption

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/nodekruise/kruise/pkg/apis/policy/v1alpha1"
)

// basePod runs one container with cpu and memory requests and limits (Burstable).
func basePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-abcde", Namespace: "team", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "nginx:1",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			},
		}}},
	}
}

func TestClassify(t *testing.T) {
	const (
		none   = policyv1alpha1.PubOperation("")
		update = policyv1alpha1.PubUpdateOperation
		resize = policyv1alpha1.PubResizeOperation
	)
	ctr := func(p *corev1.Pod) *corev1.Container { return &p.Spec.Containers[0] }
	for name, tc := range map[string]struct {
		change func(old, updated *corev1.Pod)
		want   policyv1alpha1.PubOperation
	}{
		"nothing":           {change: func(_, _ *corev1.Pod) {}, want: none},
		"labels":            {change: func(_, u *corev1.Pod) { u.Labels["tier"] = "fe" }, want: none},
		"annotations":       {change: func(_, u *corev1.Pod) { u.Annotations = map[string]string{"x": "y"} }, want: none},
		"status":            {change: func(_, u *corev1.Pod) { u.Status.Phase = corev1.PodFailed }, want: none},
		"unavailable label": {change: func(_, u *corev1.Pod) { u.Labels[policyv1alpha1.PodUnavailableLabelPrefix+"drain"] = "true" }, want: update},
		"unavailable label kept": {change: func(o, u *corev1.Pod) {
			o.Labels[policyv1alpha1.PodUnavailableLabelPrefix+"drain"] = "true"
			u.Labels[policyv1alpha1.PodUnavailableLabelPrefix+"drain"] = "true"
		}, want: none},
		"image": {change: func(_, u *corev1.Pod) { ctr(u).Image = "nginx:2" }, want: update},
		"image and cpu": {change: func(_, u *corev1.Pod) {
			ctr(u).Image = "nginx:2"
			ctr(u).Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1")
		}, want: update},
		"tolerations": {change: func(_, u *corev1.Pod) {
			u.Spec.Tolerations = []corev1.Toleration{{Key: "x", Operator: corev1.TolerationOpExists}}
		}, want: update},
		"cpu limit":      {change: func(_, u *corev1.Pod) { ctr(u).Resources.Limits[corev1.ResourceCPU] = resource.MustParse("300m") }, want: resize},
		"memory request": {change: func(_, u *corev1.Pod) { ctr(u).Resources.Requests[corev1.ResourceMemory] = resource.MustParse("96Mi") }, want: resize},
		"same quantity":  {change: func(_, u *corev1.Pod) { ctr(u).Resources.Limits[corev1.ResourceCPU] = resource.MustParse("0.2") }, want: none},
		"cpu, NotRequired": {change: func(o, u *corev1.Pod) {
			p := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
			ctr(o).ResizePolicy, ctr(u).ResizePolicy = p, p
			ctr(u).Resources.Limits[corev1.ResourceCPU] = resource.MustParse("300m")
		}, want: resize},
		"memory, RestartContainer": {change: func(o, u *corev1.Pod) {
			p := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
			ctr(o).ResizePolicy, ctr(u).ResizePolicy = p, p
			ctr(u).Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
		}, want: update},
		"cpu, with memory RestartContainer": {change: func(o, u *corev1.Pod) {
			p := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
			ctr(o).ResizePolicy, ctr(u).ResizePolicy = p, p
			ctr(u).Resources.Limits[corev1.ResourceCPU] = resource.MustParse("300m")
		}, want: resize},
		"ephemeral storage": {change: func(_, u *corev1.Pod) {
			ctr(u).Resources.Limits[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
		}, want: update},
		"QoS Burstable to Guaranteed": {change: func(_, u *corev1.Pod) {
			ctr(u).Resources.Requests = ctr(u).Resources.Limits.DeepCopy()
		}, want: update},
		"static pod": {change: func(o, u *corev1.Pod) {
			o.Annotations = map[string]string{staticPodSourceAnnotation: "file"}
			u.Annotations = map[string]string{staticPodSourceAnnotation: "file"}
			ctr(u).Resources.Limits[corev1.ResourceCPU] = resource.MustParse("300m")
		}, want: update},
		"api source is not static": {change: func(o, u *corev1.Pod) {
			o.Annotations = map[string]string{staticPodSourceAnnotation: apiSource}
			u.Annotations = map[string]string{staticPodSourceAnnotation: apiSource}
			ctr(u).Resources.Limits[corev1.ResourceCPU] = resource.MustParse("300m")
		}, want: resize},
		"init container resources": {change: func(o, u *corev1.Pod) {
			o.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
			u.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}
		}, want: update},
	} {
		t.Run(name, func(t *testing.T) {
			old, updated := basePod(), basePod()
			tc.change(old, updated)
			got := Classify(old, updated)
			assert.Equal(t, tc.want, got.Op, got.Why)
			if tc.want != none {
				assert.NotEmpty(t, got.Why)
			}
		})
	}
}
