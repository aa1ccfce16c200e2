package expose

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/fakeapi"
	"github.com/nodekruise/kruise/test/unit/golden"
)

func objects(t *testing.T) map[string]string {
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
	}
	cs := &appsv1beta1.CloneSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "CloneSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"team": "a"}},
		Spec: appsv1beta1.CloneSetSpec{Replicas: ptr.To[int32](2), Template: tpl,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	asts := &appsv1beta1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Spec: appsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](1), Template: tpl,
			Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}},
	}
	ads := &appsv1beta1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns"},
		Spec:       appsv1beta1.DaemonSetSpec{Template: tpl, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	out := map[string]string{}
	for path, obj := range map[string]any{
		"/apis/apps.kruise.io/v1beta1/namespaces/ns/clonesets/web":    cs,
		"/apis/apps.kruise.io/v1beta1/namespaces/ns/statefulsets/db":  asts,
		"/apis/apps.kruise.io/v1beta1/namespaces/ns/daemonsets/agent": ads,
	} {
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out[path] = string(raw)
	}
	return out
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	api := fakeapi.Start(t, objects(t))
	out := &bytes.Buffer{}
	var fatal error
	cmdutil.BehaviorOnFatal(func(msg string, _ int) { fatal = fmt.Errorf("%s", msg) })
	t.Cleanup(cmdutil.DefaultBehaviorOnFatal)
	cmd := NewCmdExpose(cmdutil.NewFactory(api.Flags(t, "ns")), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: out})
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		return "", err
	}
	return out.String() + "--- sent ---\n" + api.Log(), fatal
}

func TestExpose(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"cloneset-port", []string{"cloneset", "web", "--port=80", "--target-port=8080"}},
		{"cloneset-template-port", []string{"clone/web", "--name=web-svc", "--type=NodePort"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, c.args...)
			if err != nil {
				t.Fatalf("expose %v: %v", c.args, err)
			}
			golden.Assert(t, c.name, out)
		})
	}
}

func TestExposeRefusals(t *testing.T) {
	for args, want := range map[string]string{
		"asts/db":   "a Service selects by labels only",
		"ads/agent": "cannot expose",
	} {
		out, err := run(t, strings.Fields(args)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("expose %s: %v (output %q), want an error with %q", args, err, out, want)
		}
	}
}
