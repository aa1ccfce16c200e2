package nodepodprobe

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/contract/nodeprobe"
	"github.com/nodekruise/kruise/test/unit/gen"
)

const (
	succeeded = appsv1alpha1.ProbeSucceeded
	failed    = appsv1alpha1.ProbeFailed
	unknown   = appsv1alpha1.ProbeUnknown
)

// idleProbe is game#idle: condition game.io/idle; Succeeded marks label idle=true and annotation
// game.io/state=idle, Failed marks label idle=false and annotation game.io/busy=yes.
func idleProbe() appsv1alpha1.PodContainerProbe {
	return probe("idle", "game.io/idle",
		policy(succeeded, "idle", "true", "a:game.io/state", "idle"),
		policy(failed, "idle", "false", "a:game.io/busy", "yes"))
}

// idleMarked is what game#idle Succeeded leaves on the pod.
func idleMarked() []gen.PodModifier {
	return []gen.PodModifier{
		gen.AddPodLabels(map[string]string{"idle": "true"}),
		gen.AddPodAnnotations(map[string]string{"game.io/state": "idle"}),
		gen.SetPodCondition(ourCondition("game.io/idle", corev1.ConditionTrue, "", t0)),
		withRecord(map[string]nodeprobe.Marks{"game#idle": idleMarks}),
	}
}

var idleMarks = nodeprobe.Marks{Condition: "game.io/idle", Labels: []string{"idle"}, Annotations: []string{"game.io/state"}}

// stale is what taking game#idle's Succeeded marks off writes.
var stale = Plan{
	Labels:           map[string]*string{"idle": nil},
	Annotations:      map[string]*string{"game.io/state": nil, nodeprobe.MarksAnnotation: nil},
	RemoveConditions: []corev1.PodConditionType{"game.io/idle"},
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name    string
		pod     *corev1.Pod
		markers []*appsv1alpha1.PodProbeMarker
		res     Results
		want    Plan
	}{
		{
			name:    "Succeeded: condition True, the Succeeded policy's marks, the record",
			pod:     pod(),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{Entry: entry(state("game#idle", succeeded, "exit 0", t0))},
			want: Plan{
				Labels: map[string]*string{"idle": str("true")},
				Annotations: map[string]*string{"game.io/state": str("idle"), "game.io/busy": nil, // the cache would not show it
					nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{"game#idle": idleMarks})},
				Conditions: []corev1.PodCondition{ourCondition("game.io/idle", corev1.ConditionTrue, "exit 0", t0)},
			},
		},
		{
			name:    "steady state: nothing to write",
			pod:     pod(idleMarked()...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{Entry: entry(state("game#idle", succeeded, "", t1))},
			want:    Plan{},
		},
		{
			name:    "Failed: condition False (its transition kept from the result), Failed marks set, Succeeded keys removed",
			pod:     pod(idleMarked()...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{Entry: entry(state("game#idle", failed, "exit 1", t1))},
			want: Plan{
				Labels: map[string]*string{"idle": str("false")},
				Annotations: map[string]*string{"game.io/busy": str("yes"), "game.io/state": nil,
					nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{"game#idle": {Condition: "game.io/idle", Labels: []string{"idle"}, Annotations: []string{"game.io/busy"}}})},
				Conditions: []corev1.PodCondition{ourCondition("game.io/idle", corev1.ConditionFalse, "exit 1", t1)},
			},
		},
		{
			name:    "Unknown: condition False (as OpenKruise), no policy matches, every policy's keys removed",
			pod:     pod(append(idleMarked(), gen.AddPodAnnotations(map[string]string{"game.io/busy": "yes"}))...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{Entry: entry(state("game#idle", unknown, "", t1))},
			want: Plan{
				Labels: map[string]*string{"idle": nil},
				Annotations: map[string]*string{"game.io/state": nil, "game.io/busy": nil,
					nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{"game#idle": {Condition: "game.io/idle"}})},
				Conditions: []corev1.PodCondition{ourCondition("game.io/idle", corev1.ConditionFalse, "", t1)},
			},
		},
		{
			name:    "same status, new message: rewritten, the transition time kept",
			pod:     pod(idleMarked()...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{Entry: entry(state("game#idle", succeeded, "HTTP 200", t1))},
			want: Plan{Conditions: []corev1.PodCondition{{Type: "game.io/idle", Status: corev1.ConditionTrue, Reason: Reason,
				Message: "HTTP 200", LastProbeTime: t1, LastTransitionTime: t0}}},
		},
		{
			name: "a condition of the same type written by someone else (OpenKruise: no reason) is taken over",
			pod: pod(append(idleMarked(), gen.SetPodCondition(corev1.PodCondition{Type: "game.io/idle", Status: corev1.ConditionTrue,
				LastTransitionTime: t0}))...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{Entry: entry(state("game#idle", succeeded, "", t1))},
			want: Plan{Conditions: []corev1.PodCondition{{Type: "game.io/idle", Status: corev1.ConditionTrue, Reason: Reason,
				LastProbeTime: t1, LastTransitionTime: t0}}},
		},
		{
			name:    "a pod with no labels and no annotations (OpenKruise #2499) that lost its marker takes only what it has off",
			pod:     gen.Pod("web", gen.SetPodNamespace("ns"), gen.SetPodUID(podUID), gen.SetPodNodeName("node-a")),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want:    Plan{},
		},
		{
			name:    "a pod with no annotations is given them",
			pod:     pod(),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", probe("idle", "", policy(succeeded, "a:game.io/state", "idle")))},
			res:     Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want: Plan{Annotations: map[string]*string{"game.io/state": str("idle"),
				nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{"game#idle": {Annotations: []string{"game.io/state"}}})}},
		},
		{
			name: "two probes share a key: the one that sets it wins over the other's removal",
			pod:  pod(),
			markers: []*appsv1alpha1.PodProbeMarker{
				marker("a", probe("p", "", policy(succeeded, "ready", "yes"))),
				marker("b", probe("q", "", policy(succeeded, "ready", "yes"), policy(failed, "broken", "true"))),
			},
			res: Results{Entry: entry(state("a#p", succeeded, "", t0), state("b#q", failed, "", t0))},
			want: Plan{
				Labels: map[string]*string{"ready": str("yes"), "broken": str("true")},
				Annotations: map[string]*string{nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{
					"a#p": {Labels: []string{"ready"}}, "b#q": {Labels: []string{"broken"}}})},
			},
		},
		{
			name: "two probes set a key to different values: the first (markers by name) wins",
			pod:  pod(),
			markers: []*appsv1alpha1.PodProbeMarker{
				marker("z", probe("p", "", policy(succeeded, "tier", "z"))),
				marker("a", probe("p", "", policy(succeeded, "tier", "a"))),
			},
			res: Results{Entry: entry(state("z#p", succeeded, "", t0), state("a#p", succeeded, "", t0))},
			want: Plan{
				Labels: map[string]*string{"tier": str("a")},
				Annotations: map[string]*string{nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{
					"a#p": {Labels: []string{"tier"}}, "z#p": {Labels: []string{"tier"}}})},
			},
		},
		{
			name: "two probes name the same condition type: the first writes it",
			pod:  pod(),
			markers: []*appsv1alpha1.PodProbeMarker{
				marker("b", probe("p", "game.io/idle")),
				marker("a", probe("p", "game.io/idle")),
			},
			res: Results{Entry: entry(state("b#p", failed, "", t0), state("a#p", succeeded, "", t0))},
			want: Plan{
				Annotations: map[string]*string{nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{"a#p": {Condition: "game.io/idle"}})},
				Conditions:  []corev1.PodCondition{ourCondition("game.io/idle", corev1.ConditionTrue, "", t0)},
			},
		},
		{
			name: "a recorded key another current probe sets stays",
			pod: pod(append(idleMarked(), withRecord(map[string]nodeprobe.Marks{
				"game#idle": idleMarks, "other#p": {Labels: []string{"idle"}}}))...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want: Plan{Annotations: map[string]*string{"game.io/busy": nil,
				nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{"game#idle": idleMarks})}},
		},
		{
			name:    "stale: the probe was removed from its marker",
			pod:     pod(idleMarked()...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", probe("other", "", policy(succeeded, "x", "y")))},
			res:     Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want:    stale,
		},
		{
			name:    "stale: the marker is being deleted",
			pod:     pod(idleMarked()...),
			markers: []*appsv1alpha1.PodProbeMarker{deleting(marker("game", idleProbe()))},
			res:     Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want:    stale,
		},
		{
			name: "stale: the marker is gone",
			pod:  pod(idleMarked()...),
			res:  Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want: stale,
		},
		{
			name:    "stale: the pod is no longer selected (label changed)",
			pod:     pod(append(idleMarked(), gen.AddPodLabels(map[string]string{"app": "lobby"}))...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want:    stale,
		},
		{
			name:    "stale: the pod's entry is gone from the NodePodProbe status",
			pod:     pod(idleMarked()...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{},
			want:    stale,
		},
		{
			name:    "stale, on a pod that lost all its labels (#2499)",
			pod:     pod(append(idleMarked(), func(p *corev1.Pod) { p.Labels = nil })...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want: Plan{
				Annotations:      map[string]*string{"game.io/state": nil, nodeprobe.MarksAnnotation: nil},
				RemoveConditions: []corev1.PodConditionType{"game.io/idle"},
			},
		},
		{
			name:    "a key the policy no longer lists is taken off",
			pod:     pod(idleMarked()...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", probe("idle", "game.io/idle", policy(succeeded, "free", "true")))},
			res:     Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want: Plan{
				Labels: map[string]*string{"idle": nil, "free": str("true")},
				Annotations: map[string]*string{"game.io/state": nil, nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{
					"game#idle": {Condition: "game.io/idle", Labels: []string{"free"}}})},
			},
		},
		{
			name:    "a current probe without a result yet keeps what it recorded",
			pod:     pod(idleMarked()...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{Entry: entry()},
			want:    Plan{},
		},
		{
			name:    "a condition with this controller's reason that no probe wants is removed, even unrecorded",
			pod:     pod(gen.SetPodCondition(ourCondition("game.io/old", corev1.ConditionTrue, "", t0))),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{Entry: entry()},
			want:    Plan{RemoveConditions: []corev1.PodConditionType{"game.io/old"}},
		},
		{
			name: "the other policy's annotations the cache cannot show are removed with any metadata patch",
			pod:  pod(),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", probe("idle", "",
				policy(succeeded, "idle", "true"), policy(failed, "a:game.io/busy", "yes")))},
			res: Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want: Plan{
				Labels: map[string]*string{"idle": str("true")},
				Annotations: map[string]*string{"game.io/busy": nil,
					nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{"game#idle": {Labels: []string{"idle"}}})},
			},
		},
		{
			name: "... and only then: no write for them alone",
			pod:  pod(gen.AddPodLabels(map[string]string{"idle": "true"}), withRecord(map[string]nodeprobe.Marks{"game#idle": {Labels: []string{"idle"}}})),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", probe("idle", "",
				policy(succeeded, "idle", "true"), policy(failed, "a:game.io/busy", "yes")))},
			res:  Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want: Plan{},
		},
		{
			name: "a policy cannot write the marks record",
			pod:  pod(),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", probe("idle", "",
				policy(succeeded, "a:"+nodeprobe.MarksAnnotation, `{"x#y":{"labels":["app"]}}`, "a:game.io/state", "idle")))},
			res: Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want: Plan{Annotations: map[string]*string{"game.io/state": str("idle"),
				nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{"game#idle": {Annotations: []string{"game.io/state"}}})}},
		},
		{
			name:    "a pod being deleted is left alone",
			pod:     pod(append(idleMarked(), gen.SetPodDeletionTimestamp(t0.Time))...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			want:    Plan{},
		},
		{
			name:    "a finished pod is left alone",
			pod:     pod(append(idleMarked(), gen.SetPodPhase(corev1.PodSucceeded))...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			want:    Plan{},
		},
		{
			name:    "a marker of another namespace does not count",
			pod:     pod(),
			markers: []*appsv1alpha1.PodProbeMarker{func() *appsv1alpha1.PodProbeMarker { m := marker("game", idleProbe()); m.Namespace = "other"; return m }()},
			res:     Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want:    Plan{},
		},
		{
			name:    "a record that does not parse is rewritten",
			pod:     pod(append(idleMarked(), gen.AddPodAnnotations(map[string]string{nodeprobe.MarksAnnotation: "{"}))...),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			res:     Results{Entry: entry(state("game#idle", succeeded, "", t0))},
			want: Plan{Annotations: map[string]*string{"game.io/busy": nil,
				nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{"game#idle": idleMarks})}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			assert.Equal(t, tc.want, Decide(tc.pod, tc.markers, tc.res))
			assert.Equal(t, before, tc.pod, "the pod is not modified")
		})
	}
}

// Serverless pods: the results are their own conditions (the virtual node's), which are never
// written or removed.
func TestDecideServerless(t *testing.T) {
	servedBy := func(status corev1.ConditionStatus) gen.PodModifier {
		return gen.SetPodCondition(corev1.PodCondition{Type: "game.io/idle", Status: status, Reason: "VirtualNode", LastTransitionTime: t0})
	}
	serverless := Results{Serverless: true}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		markers []*appsv1alpha1.PodProbeMarker
		want    Plan
	}{
		{
			name:    "True is Succeeded: its policy's marks; no condition written",
			pod:     pod(servedBy(corev1.ConditionTrue)),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			want: Plan{
				Labels: map[string]*string{"idle": str("true")},
				Annotations: map[string]*string{"game.io/state": str("idle"), "game.io/busy": nil,
					nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{"game#idle": {Labels: []string{"idle"}, Annotations: []string{"game.io/state"}}})},
			},
		},
		{
			name: "False is Failed: the Succeeded keys come off",
			pod: pod(servedBy(corev1.ConditionFalse), gen.AddPodLabels(map[string]string{"idle": "true"}),
				gen.AddPodAnnotations(map[string]string{"game.io/state": "idle"}),
				withRecord(map[string]nodeprobe.Marks{"game#idle": {Labels: []string{"idle"}, Annotations: []string{"game.io/state"}}})),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			want: Plan{
				Labels: map[string]*string{"idle": str("false")},
				Annotations: map[string]*string{"game.io/state": nil, "game.io/busy": str("yes"),
					nodeprobe.MarksAnnotation: recordOf(map[string]nodeprobe.Marks{"game#idle": {Labels: []string{"idle"}, Annotations: []string{"game.io/busy"}}})},
			},
		},
		{
			name:    "no condition yet: nothing",
			pod:     pod(),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", idleProbe())},
			want:    Plan{},
		},
		{
			name:    "a probe without podConditionType has no result there",
			pod:     pod(servedBy(corev1.ConditionTrue)),
			markers: []*appsv1alpha1.PodProbeMarker{marker("game", probe("idle", "", policy(succeeded, "idle", "true")))},
			want:    Plan{},
		},
		{
			name: "stale marks come off (the marker is gone); conditions, even with this controller's reason, stay",
			pod: pod(servedBy(corev1.ConditionTrue), gen.AddPodLabels(map[string]string{"idle": "true"}),
				gen.SetPodCondition(ourCondition("game.io/other", corev1.ConditionTrue, "", t0)),
				withRecord(map[string]nodeprobe.Marks{"game#idle": {Labels: []string{"idle"}}})),
			want: Plan{
				Labels:      map[string]*string{"idle": nil},
				Annotations: map[string]*string{nodeprobe.MarksAnnotation: nil},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Decide(tc.pod, tc.markers, serverless))
		})
	}
}

func TestWantConditionTimes(t *testing.T) {
	c := wantCondition("x", appsv1alpha1.ContainerProbeState{State: succeeded, LastProbeTime: t1})
	assert.Equal(t, t1, c.LastTransitionTime, "no transition time reported: the probe time")
	assert.Equal(t, metav1.Time{}, wantCondition("x", appsv1alpha1.ContainerProbeState{State: failed}).LastProbeTime)
}
