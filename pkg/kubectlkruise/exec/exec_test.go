package exec

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

func hotPod(annotation string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "ns"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app"}, {Name: "envoy-1"}, {Name: "envoy-2"}, {Name: "log-agent"},
		}},
	}
	if annotation != "" {
		p.Annotations = map[string]string{sidecarrules.WorkingHotUpgradeAnnotation: annotation}
	}
	return p
}

func TestSidecarContainer(t *testing.T) {
	cases := []struct {
		name, annotation, sidecar string
		want                      string
		working                   bool
		err                       string
	}{
		{name: "first copy working", annotation: `{"envoy":"envoy-1"}`, sidecar: "envoy", want: "envoy-1", working: true},
		{name: "second copy working", annotation: `{"envoy":"envoy-2"}`, sidecar: "envoy", want: "envoy-2", working: true},
		{name: "plain sidecar", annotation: `{"envoy":"envoy-2"}`, sidecar: "log-agent", want: "log-agent"},
		{name: "unknown sidecar", annotation: `{"envoy":"envoy-2","proxy":"proxy-1"}`, sidecar: "nope", err: "its hot-upgrade sidecars are envoy, proxy"},
		{name: "no hot upgrade", sidecar: "envoy", err: "no hot-upgrade sidecar and no container named \"envoy\""},
		{name: "bad annotation", annotation: `envoy`, sidecar: "envoy", err: "is not a map"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, working, err := SidecarContainer(hotPod(c.annotation), c.sidecar)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("SidecarContainer: %q, %v; want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want || working != c.working {
				t.Errorf("SidecarContainer = %q, %t, %v; want %q, %t", got, working, err, c.want, c.working)
			}
		})
	}
}

func TestExecFlags(t *testing.T) {
	cmd := NewCmdExec(cmdutil.NewFactory(genericclioptions.NewConfigFlags(false)), genericiooptions.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	for _, name := range []string{"sidecar", "container", "stdin", "tty", "quiet", "filename", "pod-running-timeout"} {
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("exec has no --%s", name)
		}
	}
	if f := cmd.Flags().ShorthandLookup("S"); f == nil || f.Name != "sidecar" {
		t.Errorf("-S is %v, want --sidecar (kruise-tools' shorthand)", f)
	}
}
