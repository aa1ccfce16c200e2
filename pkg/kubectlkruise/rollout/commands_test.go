package rollout

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/workload/inplace"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/test/unit/golden"
)

// cloneSetRevisions are revisions 1 (busybox:1) and 2 (busybox:2, the
// CloneSet's template) of CloneSet web, and a revision of another owner
// that shares the labels.
func cloneSetRevisions(t *testing.T) []runtime.Object {
	r1 := controllerRevision(t, "web-v1", "cs-uid", 1, "busybox:1")
	r1.Annotations = map[string]string{"kubernetes.io/change-cause": "kubectl set image busybox:1"}
	return []runtime.Object{
		r1,
		controllerRevision(t, "web-v2", "cs-uid", 2, "busybox:2"),
		controllerRevision(t, "other-v9", "other-uid", 9, "busybox:9"),
	}
}

func builtinStatefulSet() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, UID: "sts-uid", Generation: 2},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: selector, Template: template("busybox:2")},
	}
}

func TestHistory(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		kube   []runtime.Object
		kruise []runtime.Object
	}{
		{name: "cloneset", args: []string{"cloneset/web"}, kube: cloneSetRevisions(t), kruise: []runtime.Object{newCloneSet()}},
		{name: "cloneset-revision", args: []string{"cloneset/web", "--revision=1"}, kube: cloneSetRevisions(t), kruise: []runtime.Object{newCloneSet()}},
		{name: "cloneset-none", args: []string{"cloneset/web"}, kruise: []runtime.Object{newCloneSet()}},
		{name: "asts", args: []string{"asts/db"}, kube: []runtime.Object{controllerRevision(t, "db-v3", "asts-uid", 3, "busybox:2")},
			kruise: []runtime.Object{newAdvancedStatefulSet(3, 3, 0, false)}},
		{name: "ads", args: []string{"ads/agent"}, kube: []runtime.Object{controllerRevision(t, "agent-v1", "ads-uid", 1, "busybox:2")},
			kruise: []runtime.Object{newAdvancedDaemonSet(2, 2)}},
		{name: "statefulset", args: []string{"sts/web"}, kube: append(cloneSetRevisionsOf(t, "sts-uid"), builtinStatefulSet())},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(c.kube, c.kruise)
			out, err := h.run(context.Background(), append([]string{"history"}, c.args...)...)
			if err != nil {
				t.Fatalf("history: %v", err)
			}
			golden.Assert(t, "history-"+c.name, out)
		})
	}
	h := newHarness(cloneSetRevisions(t), []runtime.Object{newCloneSet()})
	if _, err := h.run(context.Background(), "history", "clone/web", "--revision=7"); err == nil || !strings.Contains(err.Error(), "revision 7") {
		t.Errorf("history --revision=7: %v, want an error naming the missing revision", err)
	}
	out, err := newHarness(cloneSetRevisions(t), []runtime.Object{newCloneSet()}).run(context.Background(), "history", "clone/web", "-o", "name")
	if err != nil || out != "controllerrevision.apps/web-v1\ncontrollerrevision.apps/web-v2\n" {
		t.Errorf("history -o name: %q, %v; want the CloneSet's two revisions, oldest first", out, err)
	}
}

// cloneSetRevisionsOf are cloneSetRevisions owned by uid instead.
func cloneSetRevisionsOf(t *testing.T, uid string) []runtime.Object {
	var out []runtime.Object
	for _, o := range cloneSetRevisions(t)[:2] {
		r := o.(*appsv1.ControllerRevision)
		r.OwnerReferences[0].UID = types.UID(uid)
		out = append(out, r)
	}
	return out
}

func TestUndo(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		kube      []runtime.Object
		kruise    []runtime.Object
		wantPatch []string
	}{
		{name: "cloneset-previous", args: []string{"clone/web"}, kube: cloneSetRevisions(t), kruise: []runtime.Object{newCloneSet()},
			wantPatch: []string{`application/json-patch+json [{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"replace","path":"/spec/template","value":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"main","image":"busybox:1","resources":{}}]}}}]`}},
		{name: "cloneset-to-revision", args: []string{"clone/web", "--to-revision=1"}, kube: cloneSetRevisions(t), kruise: []runtime.Object{newCloneSet()},
			wantPatch: []string{`application/json-patch+json [{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"replace","path":"/spec/template","value":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"main","image":"busybox:1","resources":{}}]}}}]`}},
		{name: "cloneset-already-there", args: []string{"clone/web", "--to-revision=2"}, kube: cloneSetRevisions(t), kruise: []runtime.Object{newCloneSet()}},
		{name: "cloneset-dry-run", args: []string{"clone/web", "--dry-run=client"}, kube: cloneSetRevisions(t), kruise: []runtime.Object{newCloneSet()}},
		{name: "asts", args: []string{"asts/db", "--to-revision=1"},
			kube:      []runtime.Object{controllerRevision(t, "db-v1", "asts-uid", 1, "busybox:1"), controllerRevision(t, "db-v3", "asts-uid", 3, "busybox:2")},
			kruise:    []runtime.Object{newAdvancedStatefulSet(3, 3, 0, false)},
			wantPatch: []string{`application/json-patch+json [{"op":"test","path":"/metadata/resourceVersion","value":"9"},{"op":"replace","path":"/spec/template","value":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"main","image":"busybox:1","resources":{}}]}}}]`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(c.kube, c.kruise)
			out, err := h.run(context.Background(), append([]string{"undo"}, c.args...)...)
			if err != nil {
				t.Fatalf("undo: %v", err)
			}
			golden.Assert(t, "undo-"+c.name, out)
			if got := patchBodies(h.kruise.Actions()); strings.Join(got, "\n") != strings.Join(c.wantPatch, "\n") {
				t.Errorf("patches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.wantPatch, "\n"))
			}
		})
	}
	// The rolled-back CloneSet has the old template.
	h := newHarness(cloneSetRevisions(t), []runtime.Object{newCloneSet()})
	if _, err := h.run(context.Background(), "undo", "clone/web"); err != nil {
		t.Fatal(err)
	}
	cs, err := h.kruise.AppsV1alpha1().CloneSets(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || cs.Spec.Template.Spec.Containers[0].Image != "busybox:1" {
		t.Errorf("after undo: %v, image %q; want busybox:1", err, cs.Spec.Template.Spec.Containers[0].Image)
	}
	// No revision before the only one.
	h = newHarness([]runtime.Object{controllerRevision(t, "web-v2", "cs-uid", 2, "busybox:2")}, []runtime.Object{newCloneSet()})
	if _, err := h.run(context.Background(), "undo", "clone/web"); err == nil || !strings.Contains(err.Error(), "no previous revision") {
		t.Errorf("undo with one revision: %v, want 'no previous revision'", err)
	}
}

// The built-in StatefulSet is rolled back by kubectl's own Rollbacker.
func TestUndoBuiltinStatefulSet(t *testing.T) {
	objs := append(cloneSetRevisionsOf(t, "sts-uid"), builtinStatefulSet())
	h := newHarness(objs, nil)
	out, err := h.run(context.Background(), "undo", "statefulset/web")
	if err != nil {
		t.Fatalf("undo: %v", err)
	}
	if out != "statefulset.apps/web rolled back\n" {
		t.Errorf("output %q", out)
	}
	sts, err := h.kube.AppsV1().StatefulSets(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || sts.Spec.Template.Spec.Containers[0].Image != "busybox:1" {
		t.Errorf("after undo: %v, %+v; want image busybox:1", err, sts.Spec.Template.Spec.Containers)
	}
}

func TestPauseResume(t *testing.T) {
	paused := func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Paused = true }
	deployment := func(paused bool) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: appsv1.DeploymentSpec{Selector: selector, Template: template("busybox:2"), Paused: paused}}
	}
	cases := []struct {
		name, verb, arg string
		kube, kruise    []runtime.Object
		wantOut         string
		wantPatch       string
	}{
		{name: "cloneset-pause", verb: "pause", arg: "cloneset/web", kruise: []runtime.Object{newCloneSet()},
			wantOut: "cloneset.apps.kruise.io/web paused\n", wantPatch: `application/merge-patch+json {"spec":{"updateStrategy":{"paused":true}}}`},
		{name: "cloneset-already-paused", verb: "pause", arg: "cloneset/web", kruise: []runtime.Object{newCloneSet(paused)},
			wantOut: "cloneset.apps.kruise.io/web already paused\n"},
		{name: "cloneset-resume", verb: "resume", arg: "cloneset/web", kruise: []runtime.Object{newCloneSet(paused)},
			wantOut: "cloneset.apps.kruise.io/web resumed\n", wantPatch: `application/merge-patch+json {"spec":{"updateStrategy":{"paused":false}}}`},
		{name: "asts-pause", verb: "pause", arg: "asts/db", kruise: []runtime.Object{newAdvancedStatefulSet(3, 3, 0, false)},
			wantOut: "statefulset.apps.kruise.io/db paused\n", wantPatch: `application/merge-patch+json {"spec":{"updateStrategy":{"rollingUpdate":{"paused":true}}}}`},
		{name: "asts-resume", verb: "resume", arg: "asts/db", kruise: []runtime.Object{newAdvancedStatefulSet(3, 3, 0, true)},
			wantOut: "statefulset.apps.kruise.io/db resumed\n", wantPatch: `application/merge-patch+json {"spec":{"updateStrategy":{"rollingUpdate":{"paused":false}}}}`},
		{name: "ads-pause", verb: "pause", arg: "ads/agent", kruise: []runtime.Object{newAdvancedDaemonSet(2, 2)},
			wantOut: "daemonset.apps.kruise.io/agent paused\n", wantPatch: `application/merge-patch+json {"spec":{"updateStrategy":{"rollingUpdate":{"paused":true}}}}`},
		{name: "deployment-pause", verb: "pause", arg: "deploy/web", kube: []runtime.Object{deployment(false)},
			wantOut: "deployment.apps/web paused\n", wantPatch: `application/strategic-merge-patch+json {"spec":{"paused":true}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(c.kube, c.kruise)
			out, err := h.run(context.Background(), c.verb, c.arg)
			if err != nil {
				t.Fatalf("%s: %v", c.verb, err)
			}
			if out != c.wantOut {
				t.Errorf("output %q, want %q", out, c.wantOut)
			}
			got := strings.Join(append(patchBodies(h.kube.Actions()), patchBodies(h.kruise.Actions())...), "\n")
			if got != c.wantPatch {
				t.Errorf("patch %q, want %q", got, c.wantPatch)
			}
		})
	}
	// As kubectl, resuming a Deployment that is not paused is an error.
	h0 := newHarness([]runtime.Object{deployment(false)}, nil)
	if _, err := h0.run(context.Background(), "resume", "deploy/web"); err == nil || !strings.Contains(err.Error(), `deployment "web": is not paused`) {
		t.Errorf("resume of a running deployment: %v, want kubectl's 'is not paused'", err)
	}
	// kubectl cannot pause a built-in StatefulSet; neither can the plugin.
	h := newHarness([]runtime.Object{builtinStatefulSet()}, nil)
	if _, err := h.run(context.Background(), "pause", "sts/web"); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("pause sts/web: %v, want kubectl's 'not supported'", err)
	}
}

func TestRestart(t *testing.T) {
	stamp := `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-11-27T12:00:00Z"}}}}}`
	cases := []struct {
		name, arg    string
		kruise       []runtime.Object
		wantOut      string
		wantPatch    string
		wantErr      string
		kubeRestarts bool
	}{
		{name: "cloneset", arg: "clone/web", kruise: []runtime.Object{newCloneSet()},
			wantOut: "cloneset.apps.kruise.io/web restarted\n", wantPatch: "application/merge-patch+json " + stamp},
		{name: "asts", arg: "asts/db", kruise: []runtime.Object{newAdvancedStatefulSet(3, 3, 0, false)},
			wantOut: "statefulset.apps.kruise.io/db restarted\n", wantPatch: "application/merge-patch+json " + stamp},
		{name: "ads", arg: "ads/agent", kruise: []runtime.Object{newAdvancedDaemonSet(2, 2)},
			wantOut: "daemonset.apps.kruise.io/agent restarted\n", wantPatch: "application/merge-patch+json " + stamp},
		{name: "paused-cloneset", arg: "clone/web",
			kruise:  []runtime.Object{newCloneSet(func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Paused = true })},
			wantErr: `can't restart paused CloneSet "web" (run kubectl kruise rollout resume cloneset/web first)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(nil, c.kruise)
			out, err := h.run(context.Background(), "restart", c.arg)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("restart: %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("restart: %v", err)
			}
			if out != c.wantOut {
				t.Errorf("output %q, want %q", out, c.wantOut)
			}
			if got := strings.Join(patchBodies(h.kruise.Actions()), "\n"); got != c.wantPatch {
				t.Errorf("patch %q, want %q", got, c.wantPatch)
			}
		})
	}
	// The built-in kinds get kubectl's own restart patch.
	h := newHarness([]runtime.Object{builtinStatefulSet()}, nil)
	out, err := h.run(context.Background(), "restart", "sts/web")
	if err != nil || out != "statefulset.apps/web restarted\n" {
		t.Fatalf("restart sts/web: %q, %v", out, err)
	}
	sts, err := h.kube.AppsV1().StatefulSets(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || sts.Spec.Template.Annotations[restartedAtKey] == "" {
		t.Errorf("after restart: %v, template annotations %v; want %s", err, sts.Spec.Template.Annotations, restartedAtKey)
	}
}

// The stamp `restart` writes is the one the in-place planner reads: applied to the CloneSet's
// template it restarts every container in place (before, it was a bare metadata patch and
// restarted nothing).
func TestRestartStampRestartsEveryContainerInPlace(t *testing.T) {
	before := newCloneSet(func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers = append(cs.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox:2"})
	})
	h := newHarness(nil, []runtime.Object{before})
	if _, err := h.run(context.Background(), "restart", "clone/web"); err != nil {
		t.Fatalf("restart: %v", err)
	}
	after, err := h.kruise.AppsV1alpha1().CloneSets(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := inplace.Plan(&before.Spec.Template, &after.Spec.Template, inplace.Options{})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if got := spec.Containers(); !slices.Equal(got, []string{"main", "sidecar"}) || !spec.UpdateEnvFromMetadata() {
		t.Errorf("containers restarted %v, want every container (main, sidecar)", got)
	}
}

// The revision data the tests write is what the controllers write.
func TestRevisionTemplateRoundTrip(t *testing.T) {
	r := controllerRevision(t, "web-v1", "cs-uid", 1, "busybox:1")
	tmpl, err := revisionTemplate(r)
	if err != nil || tmpl.Spec.Containers[0].Image != "busybox:1" {
		t.Fatalf("revisionTemplate: %v, %+v", err, tmpl)
	}
	want := template("busybox:1")
	if !templateMatches(r, &want) {
		t.Error("a revision does not match the template it recorded")
	}
	other := template("busybox:2")
	if templateMatches(r, &other) {
		t.Error("a revision matches another template")
	}
	if _, err := revision.PatchData(&corev1.PodTemplateSpec{}, "spec", "template"); err != nil {
		t.Fatal(err)
	}
}
