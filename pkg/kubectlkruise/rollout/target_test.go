package rollout

import (
	"context"
	"reflect"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestParseTarget(t *testing.T) {
	cases := []struct {
		args     []string
		wantKind string
		builtin  bool
	}{
		{[]string{"cloneset/web"}, "CloneSet", false},
		{[]string{"clone", "web"}, "CloneSet", false},
		{[]string{"clonesets.apps.kruise.io/web"}, "CloneSet", false},
		{[]string{"asts/web"}, "StatefulSet", false},
		{[]string{"statefulsets.v1beta1.apps.kruise.io/web"}, "StatefulSet", false},
		{[]string{"ads/web"}, "DaemonSet", false},
		{[]string{"daemonset.apps.kruise.io/web"}, "DaemonSet", false},
		{[]string{"sts/web"}, "StatefulSet", true},
		{[]string{"statefulset.apps/web"}, "StatefulSet", true},
		{[]string{"deploy/web"}, "Deployment", true},
		{[]string{"DS/web"}, "DaemonSet", true},
	}
	for _, c := range cases {
		got, err := parseTarget(c.args, ns)
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		if got.kind.gvk.Kind != c.wantKind || got.kind.builtin != c.builtin || got.name != "web" || got.namespace != ns {
			t.Errorf("%v: %s builtin=%t %s/%s, want %s builtin=%t prod/web", c.args, got.kind.gvk.Kind, got.kind.builtin, got.namespace, got.name, c.wantKind, c.builtin)
		}
	}
	for _, bad := range [][]string{{"replicaset/web"}, {"web"}, {"clone/web", "x"}, {"clone/"}} {
		if _, err := parseTarget(bad, ns); err == nil {
			t.Errorf("%v: accepted, want an error", bad)
		}
	}
}

func TestCompletion(t *testing.T) {
	h := newHarness(nil, []runtime.Object{newCloneSet()})
	d := h.deps()
	cmd := &cobra.Command{}
	cmd.SetContext(context.Background())
	got, _ := d.completeTargets(cmd, nil, "a")
	if want := []string{"asts/", "ads/"}; !reflect.DeepEqual(got, want) {
		t.Errorf("completing %q: %v, want %v", "a", got, want)
	}
	got, _ = d.completeTargets(cmd, nil, "clone/w")
	if want := []string{"clone/web"}; !reflect.DeepEqual(got, want) {
		t.Errorf("completing %q: %v, want %v", "clone/w", got, want)
	}
}
