package sidecarrules

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

type fakeRevisions []*appsv1.ControllerRevision

func (f fakeRevisions) Revision(name string) (*appsv1.ControllerRevision, error) {
	for _, r := range f {
		if r.Name == name {
			return r, nil
		}
	}
	return nil, nil
}

func (f fakeRevisions) Revisions(ss, customVersion string) ([]*appsv1.ControllerRevision, error) {
	var out []*appsv1.ControllerRevision
	for _, r := range f {
		if r.Labels[NameLabel] == ss && (customVersion == "" || r.Labels[appsv1beta1.SidecarSetCustomVersionLabel] == customVersion) {
			out = append(out, r)
		}
	}
	return out, nil
}

func recorded(t *testing.T, name, owner, customVersion, image string, number int64) *appsv1.ControllerRevision {
	t.Helper()
	data, err := RevisionData(set(owner, withContainer("log", func(c *appsv1beta1.SidecarContainer) { c.Image = image })))
	require.NoError(t, err)
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{NameLabel: owner, appsv1beta1.SidecarSetCustomVersionLabel: customVersion}},
		Data:       runtime.RawExtension{Raw: data}, Revision: number,
	}
}

func TestRevisionToInject(t *testing.T) {
	revs := fakeRevisions{
		recorded(t, "log-v1", "log", "v1", "log:old", 1),
		recorded(t, "log-v1b", "log", "v1", "log:v1b", 3),
		recorded(t, "log-v2", "log", "v2", "log:v2", 2),
		recorded(t, "other-v1", "other", "v1", "other:1", 1),
	}
	latest := func(mods ...func(*appsv1beta1.SidecarSet)) *appsv1beta1.SidecarSet {
		return set("log", append([]func(*appsv1beta1.SidecarSet){withContainer("log", func(c *appsv1beta1.SidecarContainer) { c.Image = "log:latest" })}, mods...)...)
	}
	pin := func(r appsv1beta1.SidecarSetInjectRevision) func(*appsv1beta1.SidecarSet) {
		return func(ss *appsv1beta1.SidecarSet) { ss.Spec.InjectionStrategy.Revision = &r }
	}
	partition := func(p intstr.IntOrString) func(*appsv1beta1.SidecarSet) {
		return func(ss *appsv1beta1.SidecarSet) { ss.Spec.UpdateStrategy.Partition = &p }
	}
	upgradeSelector := func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "yes"}}
	}
	partial := appsv1beta1.PartialSidecarSetInjectRevisionPolicy
	for name, tc := range map[string]struct {
		ss        *appsv1beta1.SidecarSet
		podLabels map[string]string
		random    float64
		wantImage string
		wantRev   string
		wantErr   RefusalReason
	}{
		"no pin: the latest":               {ss: latest(), wantImage: "log:latest", wantRev: "log-rev1"},
		"revisionName":                     {ss: latest(pin(appsv1beta1.SidecarSetInjectRevision{RevisionName: ptr.To("log-v2")})), wantImage: "log:v2", wantRev: "log-v2"},
		"customVersion: the newest":        {ss: latest(pin(appsv1beta1.SidecarSetInjectRevision{CustomVersion: ptr.To("v1")})), wantImage: "log:v1b", wantRev: "log-v1b"},
		"another SidecarSet's name":        {ss: latest(pin(appsv1beta1.SidecarSetInjectRevision{RevisionName: ptr.To("other-v1")})), wantErr: ReasonRevisionNotFound},
		"missing revisionName":             {ss: latest(pin(appsv1beta1.SidecarSetInjectRevision{RevisionName: ptr.To("nope")})), wantErr: ReasonRevisionNotFound},
		"customVersion without a revision": {ss: latest(pin(appsv1beta1.SidecarSetInjectRevision{CustomVersion: ptr.To("v9")})), wantErr: ReasonRevisionNotFound},
		"Partial, pod outside the upgrade selector: pinned": {
			ss:        latest(pin(appsv1beta1.SidecarSetInjectRevision{RevisionName: ptr.To("log-v2"), Policy: partial}), upgradeSelector),
			podLabels: map[string]string{"app": "web"}, random: 0.99, wantImage: "log:v2", wantRev: "log-v2",
		},
		"Partial, pod inside the upgrade selector, no percentage: latest": {
			ss:        latest(pin(appsv1beta1.SidecarSetInjectRevision{RevisionName: ptr.To("log-v2"), Policy: partial}), upgradeSelector, partition(intstr.FromInt32(3))),
			podLabels: map[string]string{"app": "web", "canary": "yes"}, wantImage: "log:latest", wantRev: "log-rev1",
		},
		"Partial, 30% partition, draw below: pinned": {
			ss:     latest(pin(appsv1beta1.SidecarSetInjectRevision{RevisionName: ptr.To("log-v2"), Policy: partial}), partition(intstr.FromString("30%"))),
			random: 0.2, wantImage: "log:v2", wantRev: "log-v2",
		},
		"Partial, 30% partition, draw above: latest": {
			ss:     latest(pin(appsv1beta1.SidecarSetInjectRevision{RevisionName: ptr.To("log-v2"), Policy: partial}), partition(intstr.FromString("30%"))),
			random: 0.5, wantImage: "log:latest", wantRev: "log-rev1",
		},
		"Partial while the upgrade is paused: pinned": {
			ss: latest(pin(appsv1beta1.SidecarSetInjectRevision{RevisionName: ptr.To("log-v2"), Policy: partial}), partition(intstr.FromString("0%")),
				func(ss *appsv1beta1.SidecarSet) { ss.Spec.UpdateStrategy.Paused = true }),
			random: 0.9, wantImage: "log:v2", wantRev: "log-v2",
		},
	} {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.podLabels}}
			got, err := RevisionToInject(tc.ss, pod, revs, func() float64 { return tc.random })
			if tc.wantErr != "" {
				var r *Refusal
				require.True(t, errors.As(err, &r), "error %v", err)
				assert.Equal(t, tc.wantErr, r.Reason)
				assert.Contains(t, r.Message, "SidecarSet log")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantImage, got.Spec.Containers[0].Image)
			assert.Equal(t, tc.wantRev, got.Status.LatestRevision)
			assert.Equal(t, "log:latest", tc.ss.Spec.Containers[0].Image, "the SidecarSet itself is left as it is")
		})
	}
}

func TestForPod(t *testing.T) {
	pod := appPod()
	paused := set("paused", func(ss *appsv1beta1.SidecarSet) { ss.Spec.InjectionStrategy.Paused = true })
	other := set("other", func(ss *appsv1beta1.SidecarSet) { ss.Spec.Selector.MatchLabels = map[string]string{"app": "db"} })
	base := set("base")
	canary := set("canary", func(ss *appsv1beta1.SidecarSet) {
		ss.Annotations = map[string]string{appsv1beta1.SidecarSetCanaryAnnotation: "true", appsv1beta1.SidecarSetBaseAnnotation: "base"}
	})
	notSelectingCanary := set("canary2", func(ss *appsv1beta1.SidecarSet) {
		ss.Annotations = map[string]string{appsv1beta1.SidecarSetCanaryAnnotation: "true", appsv1beta1.SidecarSetBaseAnnotation: "plain"}
		ss.Spec.Selector.MatchLabels = map[string]string{"app": "db"}
	})
	plain := set("plain")
	broken := set("broken", func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Nope"}}
	})
	got, skipped := ForPod([]*appsv1beta1.SidecarSet{paused, other, base, canary, notSelectingCanary, broken, plain}, pod, nil)
	require.Len(t, skipped, 1)
	assert.Contains(t, skipped[0].Error(), "SidecarSet broken")
	var gotNames []string
	for _, ss := range got {
		gotNames = append(gotNames, ss.Name)
	}
	assert.Equal(t, []string{"canary", "plain"}, gotNames, "paused, unselecting, broken and canary-replaced SidecarSets left out")
}

func TestCheckPatchAllowed(t *testing.T) {
	ss := set("a", withPatch("", map[string]string{"oam.dev/x": "1"}))
	ss.Labels = map[string]string{"team": "mesh"}
	list, err := ParsePatchAllowList(`{"rules":[{"selector":{"matchLabels":{"team":"mesh"}},"allowedAnnotationKeyExprs":["^oam\\.dev/"]},{"selector":{"matchLabels":{"team":"other"}},"allowedAnnotationKeyExprs":[".*"]}]}`)
	require.NoError(t, err)
	assert.NoError(t, CheckPatchAllowed(ss, list, false))
	denied := set("b", withPatch("", map[string]string{"secret/x": "1"}))
	denied.Labels = ss.Labels
	assert.ErrorContains(t, CheckPatchAllowed(denied, list, false), `"secret/x" is not allowed`)
	noRule := set("c", withPatch("", map[string]string{"oam.dev/x": "1"}))
	assert.Error(t, CheckPatchAllowed(noRule, list, false), "no rule selects it and defaults are not allowed")
	assert.NoError(t, CheckPatchAllowed(noRule, list, true))
	assert.Error(t, CheckPatchAllowed(noRule, nil, false), "no allow-list at all")
	assert.NoError(t, CheckPatchAllowed(set("d"), nil, false), "nothing to patch")
	_, err = ParsePatchAllowList("{")
	assert.Error(t, err)
}
