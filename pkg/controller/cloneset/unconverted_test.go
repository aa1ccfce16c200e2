package cloneset

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

func TestUnconvertedStrategy(t *testing.T) {
	for typ, unconverted := range map[appsv1beta1.CloneSetUpdateStrategyType]bool{
		"": false, "RollingUpdate": false, "OnDelete": false,
		"ReCreate": true, "InPlaceIfPossible": true, "InPlaceOnly": true,
	} {
		cs := cloneSet(1, "app:1")
		cs.Spec.UpdateStrategy.Type = typ
		if got := UnconvertedStrategy(cs); (got != "") != unconverted {
			t.Errorf("type %q: UnconvertedStrategy = %q, want unconverted=%v", typ, got, unconverted)
		}
	}
}

// A CloneSet written as v1alpha1 and stored without conversion still gets its pods, but none is
// updated from a strategy the controller cannot read: a Warning Event and the FailedUpdate
// condition say why.
func TestUnconvertedStrategyHoldsUpdates(t *testing.T) {
	old := cloneSet(2, "app:1")
	oldRev := revisionOf(t, old, 1)
	cs := cloneSet(2, "app:2", func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = "InPlaceIfPossible"
	})
	f := newFixture(t, cs, []*appsv1.ControllerRevision{oldRev}, runningPod(t, cs, oldRev, "aaaaa"), runningPod(t, cs, oldRev, "bbbbb"))
	f.sync()

	for _, act := range f.actions() {
		if act.GetResource().Resource == "pods" {
			t.Errorf("a pod was written under an unconverted strategy: %v", act)
		}
	}
	var found bool
	for _, c := range f.status().Conditions {
		if c.Type == appsv1beta1.CloneSetConditionFailedUpdate && strings.Contains(c.Message, "webhook.enabled=true") {
			found = true
		}
	}
	if !found {
		t.Errorf("no FailedUpdate condition naming the fix: %+v", f.status().Conditions)
	}
	select {
	case ev := <-f.recorder.Events:
		if !strings.Contains(ev, ReasonUnconvertedStrategy) {
			t.Errorf("event %q, want %s", ev, ReasonUnconvertedStrategy)
		}
	default:
		t.Error("no Event")
	}
}
