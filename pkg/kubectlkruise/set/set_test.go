package set

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/fakeapi"
	"github.com/nodekruise/kruise/test/unit/golden"
)

const base = "/apis/apps.kruise.io/v1beta1"

func template() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "busybox:1.36", Env: []corev1.EnvVar{{Name: "KEEP", Value: "1"}}},
			{Name: "helper", Image: "busybox:1.36"},
		}},
	}
}

func meta(kind, name, ns string) (metav1.TypeMeta, metav1.ObjectMeta) {
	return metav1.TypeMeta{APIVersion: "apps.kruise.io/v1beta1", Kind: kind},
		metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: "42", UID: types.UID("uid-" + name)}
}

func objects(t *testing.T) map[string]string {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	cs := &appsv1beta1.CloneSet{Spec: appsv1beta1.CloneSetSpec{Replicas: ptr.To[int32](2), Selector: sel, Template: template()}}
	cs.TypeMeta, cs.ObjectMeta = meta("CloneSet", "web", "ns")
	asts := &appsv1beta1.StatefulSet{Spec: appsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: sel, Template: template()}}
	asts.TypeMeta, asts.ObjectMeta = meta("StatefulSet", "db", "ns")
	ads := &appsv1beta1.DaemonSet{Spec: appsv1beta1.DaemonSetSpec{Selector: sel, Template: template()}}
	ads.TypeMeta, ads.ObjectMeta = meta("DaemonSet", "agent", "ns")
	ss := &appsv1beta1.SidecarSet{Spec: appsv1beta1.SidecarSetSpec{Containers: []appsv1beta1.SidecarContainer{
		{Container: corev1.Container{Name: "log-agent", Image: "fluent-bit:3.0"}},
	}}}
	ss.TypeMeta, ss.ObjectMeta = meta("SidecarSet", "logging", "")
	out := map[string]string{}
	for path, obj := range map[string]any{
		base + "/namespaces/ns/clonesets/web":    cs,
		base + "/namespaces/ns/statefulsets/db":  asts,
		base + "/namespaces/ns/daemonsets/agent": ads,
		base + "/sidecarsets/logging":            ss,
	} {
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out[path] = string(raw)
	}
	return out
}

// run runs `set args...` against a fake API server holding objects and
// returns the output, then what the server was sent.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	api := fakeapi.Start(t, objects(t))
	out := &bytes.Buffer{}
	var fatal error
	cmdutil.BehaviorOnFatal(func(msg string, _ int) { fatal = fmt.Errorf("%s", msg) })
	t.Cleanup(cmdutil.DefaultBehaviorOnFatal)
	cmd := NewCmdSet(cmdutil.NewFactory(api.Flags(t, "ns")), genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: out})
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(out)
	if err := cmd.Execute(); err != nil {
		return "", err
	}
	return out.String() + "--- sent ---\n" + api.Log(), fatal
}

func TestSet(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"image-cloneset", []string{"image", "cloneset/web", "app=busybox:1.37"}},
		{"image-all-asts", []string{"image", "asts/db", "*=busybox:1.37"}},
		{"image-sidecarset", []string{"image", "sidecarset/logging", "log-agent=fluent-bit:3.1"}},
		{"env-cloneset", []string{"env", "clone/web", "-c", "app", "STAGE=prod", "KEEP-"}},
		{"resources-ads", []string{"resources", "ads/agent", "-c", "app", "--requests=cpu=10m,memory=16Mi", "--limits=cpu=20m"}},
		{"serviceaccount-asts", []string{"serviceaccount", "statefulset.apps.kruise.io/db", "robot"}},
		{"image-dry-run", []string{"image", "cloneset/web", "app=busybox:1.37", "--dry-run=client", "-o", "jsonpath={.spec.template.spec.containers[0].image}"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, c.args...)
			if err != nil {
				t.Fatalf("set %v: %v", c.args, err)
			}
			golden.Assert(t, c.name, out)
		})
	}
}

func TestSetRefusals(t *testing.T) {
	out, err := run(t, "serviceaccount", "sidecarset/logging", "robot")
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("no pod spec besides its containers")) {
		t.Errorf("set serviceaccount on a SidecarSet: %v (output %q), want a refusal: it has no service account", err, out)
	}
	out, err = run(t, "image", "cloneset/web", "nope=busybox")
	if err == nil {
		t.Errorf("set image of a container the CloneSet lacks: no error (output %q)", out)
	}
}
