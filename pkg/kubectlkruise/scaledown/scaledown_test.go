package scaledown

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	kruisefake "github.com/nodekruise/kruise/pkg/client/clientset/versioned/fake"
	"github.com/nodekruise/kruise/test/unit/golden"
)

func cloneSet() *appsv1alpha1.CloneSet {
	return &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "cs-uid", ResourceVersion: "7"},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas:      ptr.To[int32](4),
			ScaleStrategy: appsv1alpha1.CloneSetScaleStrategy{PodsToDelete: []string{"web-old"}},
		},
	}
}

func pod(name, ownerUID string) runtime.Object {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if ownerUID != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web",
			UID: "cs-uid", Controller: ptr.To(true)}}
		if ownerUID != "cs-uid" {
			p.OwnerReferences[0].Name, p.OwnerReferences[0].UID = "other", "other-uid"
		}
	}
	return p
}

func options(t *testing.T, output string, dryRun cmdutil.DryRunStrategy, pods ...string) (*Options, *bytes.Buffer, *kruisefake.Clientset) {
	t.Helper()
	out := &bytes.Buffer{}
	o := &Options{IOStreams: genericiooptions.IOStreams{Out: out, ErrOut: out}, Namespace: "ns", Name: "web", Pods: pods, DryRun: dryRun}
	o.PrintFlags = newPrintFlags()
	*o.PrintFlags.OutputFormat = output
	kruise := kruisefake.NewSimpleClientset(cloneSet())
	o.Kruise = kruise
	o.Kube = kubefake.NewClientset(pod("web-a", "cs-uid"), pod("web-b", "cs-uid"), pod("web-old", "cs-uid"),
		pod("stranger", "other-uid"), pod("orphan", ""))
	return o, out, kruise
}

func patches(actions []k8stesting.Action) string {
	var out []string
	for _, a := range actions {
		if p, ok := a.(k8stesting.PatchAction); ok {
			out = append(out, string(p.GetPatchType())+" "+string(p.GetPatch()))
		}
	}
	return strings.Join(out, "\n")
}

func TestScaleDown(t *testing.T) {
	cases := []struct {
		name   string
		pods   []string
		output string
		dryRun cmdutil.DryRunStrategy
		patch  bool
	}{
		{name: "two-pods", pods: []string{"web-a", " web-b", "web-a"}, patch: true},
		{name: "one-already-listed", pods: []string{"web-old", "web-b"}, patch: true},
		{name: "dry-run-client", pods: []string{"web-a"}, dryRun: cmdutil.DryRunClient, output: "jsonpath={.spec.replicas} {.spec.scaleStrategy.podsToDelete}"},
		{name: "dry-run-server", pods: []string{"web-a"}, dryRun: cmdutil.DryRunServer, patch: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, out, kruise := options(t, c.output, c.dryRun, c.pods...)
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := o.Run(context.Background()); err != nil {
				t.Fatalf("scaledown: %v", err)
			}
			sent := patches(kruise.Actions())
			if (sent != "") != c.patch {
				t.Errorf("patch sent: %q, want one: %t", sent, c.patch)
			}
			golden.Assert(t, c.name, out.String()+"--- sent ---\n"+sent+"\n")
		})
	}
}

func TestScaleDownRefusals(t *testing.T) {
	for _, c := range []struct {
		pods []string
		want string
	}{
		{[]string{"stranger"}, `pod "stranger" is not CloneSet "web"'s`},
		{[]string{"orphan"}, `pod "orphan" is not CloneSet "web"'s`},
		{[]string{"missing"}, `reading pod "missing"`},
		{[]string{"web-old"}, "already being deleted"},
	} {
		o, _, kruise := options(t, "", cmdutil.DryRunNone, c.pods...)
		err := o.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("scaledown --pods=%v: %v, want an error with %q", c.pods, err, c.want)
		}
		if sent := patches(kruise.Actions()); sent != "" {
			t.Errorf("scaledown --pods=%v sent %s", c.pods, sent)
		}
	}
	o, _, _ := options(t, "", cmdutil.DryRunNone, " ", "")
	if err := o.Validate(); err == nil {
		t.Error("scaledown without pods: no error")
	}
}

func TestCloneSetName(t *testing.T) {
	for args, want := range map[string]string{"cloneset/web": "web", "CloneSet web": "web", "clone web": "web", "web": "web", "clonesets.apps.kruise.io/web": "web"} {
		if got, err := cloneSetName(strings.Fields(args)); err != nil || got != want {
			t.Errorf("cloneSetName(%q) = %q, %v; want %q", args, got, err, want)
		}
	}
	for _, args := range []string{"deployment/web", "cloneset/"} {
		if _, err := cloneSetName(strings.Fields(args)); err == nil {
			t.Errorf("cloneSetName(%q): no error", args)
		}
	}
}
