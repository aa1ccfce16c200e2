package v1alpha1

import (
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsAdmitted(t *testing.T) {
	admitted := metav1.Condition{Type: ContainerRecreateRequestAdmitted, Status: metav1.ConditionTrue}
	waiting := metav1.Condition{Type: ContainerRecreateRequestAdmitted, Status: metav1.ConditionFalse}
	for _, tc := range []struct {
		name   string
		status ContainerRecreateRequestStatus
		want   bool
	}{
		{name: "fresh", want: false},
		{name: "Admitted True", status: ContainerRecreateRequestStatus{Phase: ContainerRecreateRequestPending, Conditions: []metav1.Condition{admitted}}, want: true},
		{name: "waiting for its pod", status: ContainerRecreateRequestStatus{Phase: ContainerRecreateRequestPending, Conditions: []metav1.Condition{waiting}}, want: false},
		{name: "Recreating, admitted by an earlier release", status: ContainerRecreateRequestStatus{Phase: ContainerRecreateRequestRecreating}, want: true},
		{name: "Recreating but not admitted", status: ContainerRecreateRequestStatus{Phase: ContainerRecreateRequestRecreating, Conditions: []metav1.Condition{waiting}}, want: false},
		{name: "Pending without the condition", status: ContainerRecreateRequestStatus{Phase: ContainerRecreateRequestPending}, want: false},
	} {
		if got := IsAdmitted(&ContainerRecreateRequest{Status: tc.status}); got != tc.want {
			t.Errorf("%s: IsAdmitted = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestIsRouted(t *testing.T) {
	routed := &ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{ContainerRecreateRequestPodUIDKey: "u", ContainerRecreateRequestNodeNameKey: "n"}},
		Spec: ContainerRecreateRequestSpec{Containers: []ContainerRecreateRequestContainer{
			{Name: "a", StatusContext: &ContainerRecreateRequestContainerContext{ContainerID: "x"}},
		}},
	}
	if !IsRouted(routed) {
		t.Error("routed request not routed")
	}
	noNode := routed.DeepCopy()
	delete(noNode.Labels, ContainerRecreateRequestNodeNameKey)
	noContext := routed.DeepCopy()
	noContext.Spec.Containers = append(noContext.Spec.Containers, ContainerRecreateRequestContainer{Name: "b"})
	for name, c := range map[string]*ContainerRecreateRequest{"no node label": noNode, "a container without statusContext": noContext} {
		if IsRouted(c) {
			t.Errorf("%s: routed", name)
		}
	}
}

func TestCreatedBefore(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	crr := func(name string, at time.Time, rev string) *ContainerRecreateRequest {
		return &ContainerRecreateRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at)},
			Status:     ContainerRecreateRequestStatus{CreationRevision: rev},
		}
	}
	list := []*ContainerRecreateRequest{
		crr("e", t0.Add(time.Second), "1"), // a later second wins over any revision
		crr("d", t0, ""),                   // no revision: after those with one
		crr("c", t0, "not-a-number"),
		crr("b", t0, "1000"),
		crr("a", t0, "999"),
		crr("z", t0, "998"),
	}
	sort.Slice(list, func(i, j int) bool { return CreatedBefore(list[i], list[j]) })
	var got string
	for _, c := range list {
		got += c.Name
	}
	if want := "zabcde"; got != want {
		t.Errorf("order %q, want %q", got, want)
	}
}
