package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	"github.com/nodekruise/kruise/test/unit/gen"
)

// Hooks of the tests: each names two labels or two finalizers, or one of each.
var (
	preNormalByLabel     = &pub.LifecycleHook{LabelsHandler: map[string]string{"warm": "true", "registered": "true"}}
	preNormalByFinalizer = &pub.LifecycleHook{FinalizersHandler: []string{"example.com/warm", "example.com/registered"}}
	inPlaceHook          = &pub.LifecycleHook{LabelsHandler: map[string]string{"ip": "true"}, FinalizersHandler: []string{"example.com/ip"}}
	preDeleteHook        = &pub.LifecycleHook{LabelsHandler: map[string]string{"pd": "true"}, FinalizersHandler: []string{"example.com/pd"}}
	markingPreDelete     = &pub.LifecycleHook{LabelsHandler: map[string]string{"pd": "true"}, MarkPodNotReady: true}
	markingInPlace       = &pub.LifecycleHook{LabelsHandler: map[string]string{"ip": "true"}, MarkPodNotReady: true}

	allHooks = &pub.Lifecycle{PreNormal: preNormalByLabel, InPlaceUpdate: inPlaceHook, PreDelete: preDeleteHook}
)

// podIn is a scheduled pod in state with mods.
func podIn(state pub.LifecycleStateType, mods ...gen.PodModifier) *corev1.Pod {
	p := gen.Pod("web-0", gen.SetPodNamespace("default"), gen.SetPodNodeName("node-a"))
	if state != "" {
		p = gen.PodFrom(p, gen.SetPodLifecycleState(state))
	}
	return gen.PodFrom(p, mods...)
}

func labels(kv ...string) gen.PodModifier {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return gen.AddPodLabels(m)
}

var unscheduled gen.PodModifier = func(p *corev1.Pod) { p.Spec.NodeName = "" }

func TestDecide(t *testing.T) {
	tests := []struct {
		name        string
		lc          *pub.Lifecycle
		pod         *corev1.Pod
		want        Want
		atTarget    bool
		wantAction  Action
		wantState   pub.LifecycleStateType
		wantRestore bool
	}{
		// Creation.
		{name: "new pod starts PreparingNormal", lc: allHooks, pod: gen.Pod("web-0"), want: WantCreate,
			wantAction: ActionSetState, wantState: "PreparingNormal"},
		{name: "new pod without lifecycle starts PreparingNormal too", pod: gen.Pod("web-0"), want: WantCreate,
			wantAction: ActionSetState, wantState: "PreparingNormal"},

		// PreparingNormal → Normal.
		{name: "no preNormal, scheduled: Normal", pod: podIn("PreparingNormal"),
			wantAction: ActionSetState, wantState: "Normal"},
		{name: "no preNormal, not scheduled: waits for the scheduler", pod: podIn("PreparingNormal", unscheduled),
			wantAction: ActionWait, wantState: "PreparingNormal"},
		{name: "lifecycle without preNormal, scheduled: Normal", lc: &pub.Lifecycle{PreDelete: preDeleteHook}, pod: podIn("PreparingNormal"),
			wantAction: ActionSetState, wantState: "Normal"},
		{name: "preNormal by label, none on the pod: waits", lc: allHooks, pod: podIn("PreparingNormal"),
			wantAction: ActionWait, wantState: "PreparingNormal"},
		{name: "preNormal by label, one of two: waits", lc: allHooks, pod: podIn("PreparingNormal", labels("warm", "true")),
			wantAction: ActionWait, wantState: "PreparingNormal"},
		{name: "preNormal by label, wrong value: waits", lc: allHooks, pod: podIn("PreparingNormal", labels("warm", "true", "registered", "no")),
			wantAction: ActionWait, wantState: "PreparingNormal"},
		{name: "preNormal by label, all: Normal", lc: allHooks, pod: podIn("PreparingNormal", labels("warm", "true", "registered", "true")),
			wantAction: ActionSetState, wantState: "Normal"},
		{name: "preNormal by label, all, not scheduled yet: Normal (the hook decides)", lc: allHooks,
			pod:        podIn("PreparingNormal", labels("warm", "true", "registered", "true"), unscheduled),
			wantAction: ActionSetState, wantState: "Normal"},
		{name: "preNormal by finalizer, one of two: waits", lc: &pub.Lifecycle{PreNormal: preNormalByFinalizer},
			pod:        podIn("PreparingNormal", gen.AddPodFinalizers("example.com/registered")),
			wantAction: ActionWait, wantState: "PreparingNormal"},
		{name: "preNormal by finalizer, all: Normal", lc: &pub.Lifecycle{PreNormal: preNormalByFinalizer},
			pod:        podIn("PreparingNormal", gen.AddPodFinalizers("example.com/registered", "example.com/warm")),
			wantAction: ActionSetState, wantState: "Normal"},
		{name: "preNormal of both forms, labels only: waits",
			lc:         &pub.Lifecycle{PreNormal: &pub.LifecycleHook{LabelsHandler: map[string]string{"warm": "true"}, FinalizersHandler: []string{"example.com/warm"}}},
			pod:        podIn("PreparingNormal", labels("warm", "true")),
			wantAction: ActionWait, wantState: "PreparingNormal"},

		// Refresh of settled pods and odd labels.
		{name: "Normal stays", lc: allHooks, pod: podIn("Normal"), wantAction: ActionNone, wantState: "Normal"},
		{name: "no state: left alone", lc: allHooks, pod: podIn(""), wantAction: ActionNone, wantState: ""},
		{name: "unknown state: left alone", lc: allHooks, pod: podIn("Bogus"), wantAction: ActionNone, wantState: "Bogus"},

		// Normal → PreparingUpdate or Updating.
		{name: "update, inPlaceUpdate hook by label: PreparingUpdate", lc: allHooks, pod: podIn("Normal", labels("ip", "true")), want: WantUpdate,
			wantAction: ActionSetState, wantState: "PreparingUpdate"},
		{name: "update, inPlaceUpdate hook by finalizer: PreparingUpdate", lc: allHooks, pod: podIn("Normal", gen.AddPodFinalizers("example.com/ip")), want: WantUpdate,
			wantAction: ActionSetState, wantState: "PreparingUpdate"},
		{name: "update, hook not on the pod: straight to Updating", lc: allHooks, pod: podIn("Normal"), want: WantUpdate,
			wantAction: ActionUpdate, wantState: "Updating"},
		{name: "update, no lifecycle: Updating", pod: podIn("Normal"), want: WantUpdate,
			wantAction: ActionUpdate, wantState: "Updating"},
		{name: "update of a pod with no state: as Normal", lc: allHooks, pod: podIn("", labels("ip", "true")), want: WantUpdate,
			wantAction: ActionSetState, wantState: "PreparingUpdate"},
		{name: "update of a PreparingNormal pod: as Normal", lc: allHooks, pod: podIn("PreparingNormal"), want: WantUpdate,
			wantAction: ActionUpdate, wantState: "Updating"},

		// PreparingUpdate.
		{name: "PreparingUpdate, one of the hook still on: waits", lc: allHooks, pod: podIn("PreparingUpdate", gen.AddPodFinalizers("example.com/ip")), want: WantUpdate,
			wantAction: ActionWait, wantState: "PreparingUpdate"},
		{name: "PreparingUpdate, hook released: Updating", lc: allHooks, pod: podIn("PreparingUpdate"), want: WantUpdate,
			wantAction: ActionUpdate, wantState: "Updating"},
		{name: "PreparingUpdate on refresh, hooked: waits", lc: allHooks, pod: podIn("PreparingUpdate", labels("ip", "true")),
			wantAction: ActionWait, wantState: "PreparingUpdate"},
		{name: "PreparingUpdate on refresh, released: the update pass decides", lc: allHooks, pod: podIn("PreparingUpdate"),
			wantAction: ActionNone, wantState: "PreparingUpdate"},

		// Rollback while waiting in PreparingUpdate (#1156).
		{name: "rollback, hook still all on: Normal", lc: allHooks, atTarget: true,
			pod:        podIn("PreparingUpdate", labels("ip", "true"), gen.AddPodFinalizers("example.com/ip")),
			wantAction: ActionSetState, wantState: "Normal"},
		{name: "rollback, hook partly released: Updated", lc: allHooks, atTarget: true,
			pod:        podIn("PreparingUpdate", labels("ip", "true")),
			wantAction: ActionSetState, wantState: "Updated"},
		{name: "rollback, hook released: Updated", lc: allHooks, atTarget: true, pod: podIn("PreparingUpdate"),
			wantAction: ActionSetState, wantState: "Updated"},
		{name: "rollback, lifecycle without inPlaceUpdate: Normal at once", lc: &pub.Lifecycle{PreDelete: preDeleteHook}, atTarget: true,
			pod: podIn("PreparingUpdate"), wantAction: ActionSetState, wantState: "Normal"},

		// Updating.
		{name: "Updating, not finished: waits", lc: allHooks, pod: podIn("Updating"),
			wantAction: ActionWait, wantState: "Updating"},
		{name: "Updating, finished, hook not back: Updated", lc: allHooks, pod: podIn("Updating", labels("ip", "true")), want: WantUpdateFinished,
			wantAction: ActionSetState, wantState: "Updated"},
		{name: "Updating, finished, hook all back: Normal", lc: allHooks, pod: podIn("Updating", labels("ip", "true"), gen.AddPodFinalizers("example.com/ip")), want: WantUpdateFinished,
			wantAction: ActionSetState, wantState: "Normal"},
		{name: "Updating, finished, no inPlaceUpdate hook: Normal", lc: &pub.Lifecycle{PreNormal: preNormalByLabel}, pod: podIn("Updating"), want: WantUpdateFinished,
			wantAction: ActionSetState, wantState: "Normal"},
		{name: "Updating, finished, no lifecycle: Normal", pod: podIn("Updating"), want: WantUpdateFinished,
			wantAction: ActionSetState, wantState: "Normal"},
		{name: "Updating, asked to update again: continues", lc: allHooks, pod: podIn("Updating", labels("ip", "true")), want: WantUpdate,
			wantAction: ActionUpdate, wantState: "Updating"},
		{name: "update finished on a Normal pod: a refresh", lc: allHooks, pod: podIn("Normal"), want: WantUpdateFinished,
			wantAction: ActionNone, wantState: "Normal"},

		// Updated → Normal.
		{name: "Updated, hook partly back: waits", lc: allHooks, pod: podIn("Updated", gen.AddPodFinalizers("example.com/ip")),
			wantAction: ActionWait, wantState: "Updated"},
		{name: "Updated, hook all back: Normal", lc: allHooks, pod: podIn("Updated", labels("ip", "true"), gen.AddPodFinalizers("example.com/ip")),
			wantAction: ActionSetState, wantState: "Normal"},
		{name: "Updated, hook gone from the workload: Normal", lc: &pub.Lifecycle{}, pod: podIn("Updated"),
			wantAction: ActionSetState, wantState: "Normal"},
		{name: "Updated, updated again: PreparingUpdate with the hook restored", lc: allHooks, pod: podIn("Updated"), want: WantUpdate,
			wantAction: ActionSetState, wantState: "PreparingUpdate", wantRestore: true},
		{name: "Updated, updated again without a hook: Updating", pod: podIn("Updated"), want: WantUpdate,
			wantAction: ActionUpdate, wantState: "Updating"},

		// Delete.
		{name: "delete, preDelete hooked by label: PreparingDelete", lc: allHooks, pod: podIn("Normal", labels("pd", "true")), want: WantDelete,
			wantAction: ActionSetState, wantState: "PreparingDelete"},
		{name: "delete, preDelete hooked by finalizer: PreparingDelete", lc: allHooks, pod: podIn("Normal", gen.AddPodFinalizers("example.com/pd")), want: WantDelete,
			wantAction: ActionSetState, wantState: "PreparingDelete"},
		{name: "delete, not hooked: delete", lc: allHooks, pod: podIn("Normal"), want: WantDelete,
			wantAction: ActionDelete, wantState: "Normal"},
		{name: "delete, no lifecycle: delete", pod: podIn("Normal", labels("pd", "true")), want: WantDelete,
			wantAction: ActionDelete, wantState: "Normal"},
		{name: "delete, PreparingDelete still hooked: waits", lc: allHooks, pod: podIn("PreparingDelete", gen.AddPodFinalizers("example.com/pd")), want: WantDelete,
			wantAction: ActionWait, wantState: "PreparingDelete"},
		{name: "delete, PreparingDelete released: delete", lc: allHooks, pod: podIn("PreparingDelete"), want: WantDelete,
			wantAction: ActionDelete, wantState: "PreparingDelete"},
		{name: "delete while Updating, hooked: PreparingDelete", lc: allHooks, pod: podIn("Updating", labels("pd", "true")), want: WantDelete,
			wantAction: ActionSetState, wantState: "PreparingDelete"},
		{name: "delete of a pod with an unknown state: by its hook", lc: allHooks, pod: podIn("Bogus"), want: WantDelete,
			wantAction: ActionDelete, wantState: "Bogus"},
		{name: "PreparingDelete on refresh, hooked: waits", lc: allHooks, pod: podIn("PreparingDelete", labels("pd", "true")),
			wantAction: ActionWait, wantState: "PreparingDelete"},
		{name: "PreparingDelete on refresh, released: not deleted by a refresh", lc: allHooks, pod: podIn("PreparingDelete"),
			wantAction: ActionNone, wantState: "PreparingDelete"},

		// Update refused.
		{name: "update of a PreparingDelete pod: refused", lc: allHooks, pod: podIn("PreparingDelete"), want: WantUpdate,
			wantAction: ActionRefuse, wantState: "PreparingDelete"},
		{name: "update of an unknown state: refused", lc: allHooks, pod: podIn("Bogus"), want: WantUpdate,
			wantAction: ActionRefuse, wantState: "Bogus"},

		// Scale up again: PreparingDelete → PreparingNormal.
		{name: "keep, no markPodNotReady: PreparingNormal", lc: allHooks, pod: podIn("PreparingDelete", labels("pd", "true")), want: WantKeep,
			wantAction: ActionSetState, wantState: "PreparingNormal"},
		{name: "keep, preDelete marks not-ready: refused", lc: &pub.Lifecycle{PreDelete: markingPreDelete}, pod: podIn("PreparingDelete"), want: WantKeep,
			wantAction: ActionRefuse, wantState: "PreparingDelete"},
		{name: "keep, inPlaceUpdate marks not-ready: refused", lc: &pub.Lifecycle{PreDelete: preDeleteHook, InPlaceUpdate: markingInPlace}, pod: podIn("PreparingDelete"), want: WantKeep,
			wantAction: ActionRefuse, wantState: "PreparingDelete"},
		{name: "keep a pod not being deleted: nothing", lc: allHooks, pod: podIn("Normal"), want: WantKeep,
			wantAction: ActionNone, wantState: "Normal"},

		{name: "unknown want: refused", lc: allHooks, pod: podIn("Normal"), want: Want(42),
			wantAction: ActionRefuse, wantState: "Normal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			d := Decide(Input{Pod: tc.pod, Lifecycle: tc.lc, Want: tc.want, AtTargetRevision: tc.atTarget})
			assert.Equal(t, tc.wantAction, d.Action, "action (reason %q)", d.Reason)
			assert.Equal(t, tc.wantState, d.State)
			assert.NotEmpty(t, d.Reason)
			if tc.wantRestore {
				assert.Same(t, tc.lc.InPlaceUpdate, d.RestoreHook)
			} else {
				assert.Nil(t, d.RestoreHook)
			}
			assert.Equal(t, before, tc.pod, "Decide changes nothing")
		})
	}
}

// A pod walked through a whole in-place update with a hook by Decide and Apply alone, as a
// workload and a hook owner would.
func TestDecideWalksAnUpdate(t *testing.T) {
	lc := &pub.Lifecycle{InPlaceUpdate: inPlaceHook}
	pod := podIn("", labels("ip", "true"), gen.AddPodFinalizers("example.com/ip"))
	step := func(in Input, want Action, state pub.LifecycleStateType) {
		t.Helper()
		in.Pod, in.Lifecycle = pod, lc
		d := Decide(in)
		assert.Equal(t, want, d.Action, d.Reason)
		assert.Equal(t, state, d.State, d.Reason)
		d.Apply(pod, clk)
		if d.Action == ActionUpdate {
			StateSetter(d.State, clk)(pod)
		}
		assert.Equal(t, string(state), pod.Labels[pub.LifecycleStateKey])
	}
	step(Input{Want: WantCreate}, ActionSetState, "PreparingNormal")
	step(Input{}, ActionSetState, "Normal")
	step(Input{Want: WantUpdate}, ActionSetState, "PreparingUpdate")
	step(Input{Want: WantUpdate}, ActionWait, "PreparingUpdate")
	// The hook owner releases the pod.
	delete(pod.Labels, "ip")
	pod.Finalizers = nil
	step(Input{Want: WantUpdate}, ActionUpdate, "Updating")
	step(Input{}, ActionWait, "Updating")
	step(Input{Want: WantUpdateFinished}, ActionSetState, "Updated")
	// Another update comes before the owner puts the hook back: it is put back for them.
	step(Input{Want: WantUpdate}, ActionSetState, "PreparingUpdate")
	assert.True(t, AllHooked(inPlaceHook, pod))
	step(Input{AtTargetRevision: true}, ActionSetState, "Normal")
}

func TestWantAndActionNames(t *testing.T) {
	assert.Equal(t, "UpdateFinished", WantUpdateFinished.String())
	assert.Equal(t, "Want(9)", Want(9).String())
	assert.Equal(t, "SetState", ActionSetState.String())
	assert.Equal(t, "Action(-1)", Action(-1).String())
}
