package rollout

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/golden"
)

var rolloutsGVR = schema.GroupVersionResource{Group: "rollouts.kruise.io", Version: "v1beta1", Resource: "rollouts"}

// kruiseRollout is a Rollout of workload kind/name whose release (canaryStatus or
// blueGreenStatus, or none when "") is in state.
func kruiseRollout(name, apiVersion, workloadKind, workloadName, release, state string) *unstructured.Unstructured {
	r := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": "Rollout",
		"metadata": map[string]any{"name": name, "namespace": ns, "resourceVersion": "11"},
	}}
	ref := map[string]any{"apiVersion": "apps.kruise.io/v1alpha1", "kind": workloadKind, "name": workloadName}
	if apiVersion == "rollouts.kruise.io/v1alpha1" {
		_ = unstructured.SetNestedMap(r.Object, ref, "spec", "objectRef", "workloadRef")
	} else {
		_ = unstructured.SetNestedMap(r.Object, ref, "spec", "workloadRef")
	}
	if release != "" {
		_ = unstructured.SetNestedField(r.Object, map[string]any{"currentStepIndex": int64(1), "currentStepState": state}, "status", release)
	}
	return r
}

func (h *harness) withRollouts(objs ...runtime.Object) *harness {
	h.rolloutVersion = rolloutsGVR.Version
	for _, o := range objs {
		h.rolloutVersion = o.GetObjectKind().GroupVersionKind().Version
	}
	h.rollouts = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{rolloutsGVR.GroupResource().WithVersion(h.rolloutVersion): "RolloutList"}, objs...)
	return h
}

func rolloutPatches(h *harness) string {
	if h.rollouts == nil {
		return ""
	}
	return strings.Join(patchBodies(h.rollouts.Actions()), "\n")
}

func TestApprove(t *testing.T) {
	partitioned := func(updatedReady int32) *appsv1alpha1.CloneSet {
		return newCloneSet(withPartition(2), withUpdated(updatedReady, updatedReady))
	}
	cases := []struct {
		name   string
		args   []string
		kruise []runtime.Object
		// rollouts, when not nil, installs the Rollout CRD with these objects.
		rollouts []runtime.Object
	}{
		{name: "rollout-canary", args: []string{"rollout/demo"},
			rollouts: []runtime.Object{kruiseRollout("demo", "rollouts.kruise.io/v1beta1", "CloneSet", "web", "canaryStatus", "StepPaused")}},
		{name: "rollout-v1alpha1", args: []string{"rollouts.rollouts.kruise.io", "demo"},
			rollouts: []runtime.Object{kruiseRollout("demo", "rollouts.kruise.io/v1alpha1", "CloneSet", "web", "canaryStatus", "StepPaused")}},
		{name: "rollout-blue-green", args: []string{"rollout/demo"},
			rollouts: []runtime.Object{kruiseRollout("demo", "rollouts.kruise.io/v1beta1", "CloneSet", "web", "blueGreenStatus", "StepPaused")}},
		{name: "cloneset-through-rollout", args: []string{"cloneset/web"}, kruise: []runtime.Object{partitioned(2)},
			rollouts: []runtime.Object{
				kruiseRollout("other", "rollouts.kruise.io/v1beta1", "CloneSet", "api", "canaryStatus", "StepPaused"),
				kruiseRollout("demo", "rollouts.kruise.io/v1beta1", "CloneSet", "web", "canaryStatus", "StepPaused"),
			}},
		{name: "cloneset-through-v1alpha1-rollout", args: []string{"cloneset/web"}, kruise: []runtime.Object{partitioned(2)},
			rollouts: []runtime.Object{kruiseRollout("demo", "rollouts.kruise.io/v1alpha1", "CloneSet", "web", "canaryStatus", "StepPaused")}},
		{name: "cloneset-partition", args: []string{"cloneset/web"}, kruise: []runtime.Object{partitioned(2)}},
		{name: "cloneset-partition-no-rollout-driving", args: []string{"clone", "web"}, kruise: []runtime.Object{partitioned(2)},
			rollouts: []runtime.Object{kruiseRollout("other", "rollouts.kruise.io/v1beta1", "CloneSet", "api", "canaryStatus", "StepPaused")}},
		{name: "cloneset-no-partition", args: []string{"cloneset/web"}, kruise: []runtime.Object{newCloneSet()}},
		{name: "asts-partition", args: []string{"asts/db"}, kruise: []runtime.Object{newAdvancedStatefulSet(1, 1, 2, false)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(nil, c.kruise)
			if c.rollouts != nil {
				h.withRollouts(c.rollouts...)
			}
			out, err := h.run(context.Background(), append([]string{"approve"}, c.args...)...)
			if err != nil {
				t.Fatalf("approve %v: %v", c.args, err)
			}
			sent := strings.Join(append(patchBodies(h.kruise.Actions()), rolloutPatches(h)), "\n")
			golden.Assert(t, "approve-"+c.name, out+h.err.String()+"--- sent ---\n"+strings.TrimSpace(sent)+"\n")
		})
	}
}

func TestApproveRefusals(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		kruise   []runtime.Object
		rollouts []runtime.Object
		want     string
	}{
		{name: "no CRD", args: []string{"rollout/demo"}, want: "rollouts.rollouts.kruise.io is not installed in this cluster"},
		{name: "step not paused", args: []string{"rollout/demo"},
			rollouts: []runtime.Object{kruiseRollout("demo", "rollouts.kruise.io/v1beta1", "CloneSet", "web", "canaryStatus", "StepUpgrade")},
			want:     `current canary state is "StepUpgrade", not "StepPaused"`},
		{name: "not progressing", args: []string{"rollout/demo"},
			rollouts: []runtime.Object{kruiseRollout("demo", "rollouts.kruise.io/v1beta1", "CloneSet", "web", "", "")},
			want:     "not in canary or blue-green progress"},
		{name: "missing rollout", args: []string{"rollout/nope"}, rollouts: []runtime.Object{}, want: `reading Rollout "nope"`},
		{name: "step not done", args: []string{"cloneset/web"}, kruise: []runtime.Object{newCloneSet(withPartition(2), withUpdated(2, 1))},
			want: "1 of 2 pods updated and ready"},
		{name: "not observed", args: []string{"cloneset/web"}, kruise: []runtime.Object{newCloneSet(withPartition(2), func(cs *appsv1alpha1.CloneSet) { cs.Status.ObservedGeneration = 1 })},
			want: "has not yet seen its latest spec"},
		{name: "daemonset", args: []string{"ads/agent"}, kruise: []runtime.Object{newAdvancedDaemonSet(1, 1)}, want: "cannot be approved"},
		{name: "deployment", args: []string{"deploy/web"}, want: "cannot be approved"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(nil, c.kruise)
			if c.rollouts != nil {
				h.withRollouts(c.rollouts...)
			}
			_, err := h.run(context.Background(), append([]string{"approve"}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("approve %v: %v, want an error with %q", c.args, err, c.want)
			}
			if sent := strings.TrimSpace(strings.Join(append(patchBodies(h.kruise.Actions()), rolloutPatches(h)), "")); sent != "" {
				t.Errorf("approve %v sent %s", c.args, sent)
			}
		})
	}
}
