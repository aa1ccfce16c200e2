package gen

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestContainerModifiers(t *testing.T) {
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	c := Container("app",
		SetContainerImage("app:1"),
		AddContainerEnvFromField("ZONE", "metadata.labels['zone']"),
		SetContainerResources(cpu, cpu),
		AddContainerResizePolicy(corev1.ResourceCPU, corev1.NotRequired),
		SetContainerRestartPolicy(corev1.ContainerRestartPolicyAlways),
	)
	assert.Equal(t, "app", c.Name)
	assert.Equal(t, "app:1", c.Image)
	assert.Equal(t, "metadata.labels['zone']", c.Env[0].ValueFrom.FieldRef.FieldPath)
	assert.Equal(t, cpu, c.Resources.Requests)
	assert.Equal(t, corev1.NotRequired, c.ResizePolicy[0].RestartPolicy)
	assert.Equal(t, corev1.ContainerRestartPolicyAlways, *c.RestartPolicy)
}

func TestPodTemplateCarriesMetadataAndSpec(t *testing.T) {
	tpl := PodTemplate(AddPodLabels(map[string]string{"app": "web"}), AddPodContainer(Container("app")),
		SetPodInitContainerStatus(corev1.ContainerStatus{Name: "ignored"}))
	assert.Equal(t, map[string]string{"app": "web"}, tpl.Labels)
	assert.Equal(t, "app", tpl.Spec.Containers[0].Name)

	p := Pod("web", SetPodInitContainerStatus(corev1.ContainerStatus{Name: "a", ContainerID: "1"}),
		SetPodInitContainerStatus(corev1.ContainerStatus{Name: "a", ContainerID: "2"}))
	assert.Equal(t, []corev1.ContainerStatus{{Name: "a", ContainerID: "2"}}, p.Status.InitContainerStatuses)
}
