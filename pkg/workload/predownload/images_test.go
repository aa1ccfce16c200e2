package predownload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// template has containers given as name, image pairs; a name starting with "+" is a native
// sidecar (an init container that always restarts), one starting with "-" a plain init container.
func template(pairs ...string) *corev1.PodTemplateSpec {
	t := &corev1.PodTemplateSpec{}
	for i := 0; i+1 < len(pairs); i += 2 {
		name, image := pairs[i], pairs[i+1]
		switch name[0] {
		case '+':
			t.Spec.InitContainers = append(t.Spec.InitContainers, corev1.Container{Name: name[1:], Image: image,
				RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)})
		case '-':
			t.Spec.InitContainers = append(t.Spec.InitContainers, corev1.Container{Name: name[1:], Image: image})
		default:
			t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: name, Image: image})
		}
	}
	return t
}

func TestChangedImages(t *testing.T) {
	cases := []struct {
		name string
		to   *corev1.PodTemplateSpec
		from []*corev1.PodTemplateSpec
		want []ContainerImage
	}{
		{name: "no templates", to: nil, want: nil},
		{name: "nothing to compare with", to: template("main", "app:2"), want: nil},
		{name: "one changed", to: template("main", "app:2", "log", "log:1"), from: []*corev1.PodTemplateSpec{template("main", "app:1", "log", "log:1")},
			want: []ContainerImage{{"main", "app:2"}}},
		{name: "two changed, in template order", to: template("main", "app:2", "log", "log:2"),
			from: []*corev1.PodTemplateSpec{template("log", "log:1", "main", "app:1")},
			want: []ContainerImage{{"main", "app:2"}, {"log", "log:2"}}},
		{name: "same new image twice: one job", to: template("main", "app:2", "copy", "app:2"),
			from: []*corev1.PodTemplateSpec{template("main", "app:1", "copy", "app:0")}, want: []ContainerImage{{"main", "app:2"}}},
		{name: "a new container is left out", to: template("main", "app:1", "new", "new:1"), from: []*corev1.PodTemplateSpec{template("main", "app:1")},
			want: nil},
		{name: "native sidecar first", to: template("main", "app:2", "+proxy", "proxy:2"), from: []*corev1.PodTemplateSpec{template("main", "app:1", "+proxy", "proxy:1")},
			want: []ContainerImage{{"proxy", "proxy:2"}, {"main", "app:2"}}},
		{name: "plain init containers do not run again", to: template("main", "app:1", "-setup", "setup:2"),
			from: []*corev1.PodTemplateSpec{template("main", "app:1", "-setup", "setup:1")}, want: nil},
		{name: "changed against any old template", to: template("main", "app:2"),
			from: []*corev1.PodTemplateSpec{template("main", "app:2"), nil, template("main", "app:1")}, want: []ContainerImage{{"main", "app:2"}}},
		{name: "every old template has it", to: template("main", "app:2"),
			from: []*corev1.PodTemplateSpec{template("main", "app:2"), template("main", "app:2")}, want: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ChangedImages(tc.to, tc.from...))
		})
	}
}
