package v1alpha1

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
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

// The snapshot holds the request's containers, in spec order, whose running
// instance started no earlier than the request was created.
func TestContainerStatusSnapshot(t *testing.T) {
	created := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	crr := &ContainerRecreateRequest{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
		Spec: ContainerRecreateRequestSpec{Containers: []ContainerRecreateRequestContainer{
			{Name: "b"}, {Name: "a"}, {Name: "old"}, {Name: "stopped"}, {Name: "missing"},
		}},
	}
	running := func(name, id string, at time.Time, ready bool, restarts int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, ContainerID: id, Ready: ready, RestartCount: restarts,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}
	}
	pod := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
		running("a", "containerd://a2", created.Add(time.Second), false, 2),
		running("b", "containerd://b1", created, true, 1),
		running("old", "containerd://o", created.Add(-time.Second), true, 0),
		{Name: "stopped", ContainerID: "containerd://s", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
		running("other", "containerd://x", created.Add(time.Second), true, 0),
	}}}
	assert.Equal(t, []ContainerRecreateRequestSyncContainerStatus{
		{Name: "b", Ready: true, RestartCount: 1, ContainerID: "containerd://b1"},
		{Name: "a", Ready: false, RestartCount: 2, ContainerID: "containerd://a2"},
	}, ContainerStatusSnapshot(crr, pod))
	assert.Nil(t, ContainerStatusSnapshot(crr, &corev1.Pod{}))
}
