package cloneset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/process/workers"
)

func withClaimTemplate(cs *appsv1beta1.CloneSet) {
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
}

// refusePods makes every pod creation fail as a full ResourceQuota refuses it.
func refusePods(f *fixture) {
	f.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName()
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), name,
			errors.New("exceeded quota: compute, requested: pods=1, used: pods=4, limited: pods=4"))
	})
}

// showClaims puts the fake API server's PVCs into the informer cache the way the watch would,
// through the controller's handlers (which observe the expected creations).
func showClaims(t *testing.T, f *fixture) {
	t.Helper()
	list, err := f.kube.CoreV1().PersistentVolumeClaims(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		cl := &list.Items[i]
		if _, exists, _ := f.ctrl.claimIndex.Get(cl); exists {
			continue
		}
		if err := f.ctrl.claimIndex.Add(cl); err != nil {
			t.Fatal(err)
		}
		f.ctrl.claimAdded(cl)
	}
}

// Pods refused by a quota, PVC reuse off: the PVCs made for them are kept and taken by the next
// attempts, not deleted and made again on every pass; each pass fails (the queue backs off) and
// says why in FailedScale and a FailedCreate Event. Before, every other pass deleted the PVCs
// as unused and succeeded, resetting the backoff, and the next made new ones.
func TestRefusedPodsKeepTheirClaims(t *testing.T) {
	cs := cloneSet(3, "app:1", withClaimTemplate)
	f := newFixture(t, cs, nil)
	roomForEvents(f)
	refusePods(f)

	var podNames []string
	claimCreates, claimDeletes := 0, 0
	for pass := 0; pass < 5; pass++ {
		err := f.syncErr()
		if err == nil || !strings.Contains(err.Error(), "exceeded quota") {
			t.Fatalf("pass %d: error %v, want the quota's refusal (so that the queue backs off)", pass, err)
		}
		claimCreates += f.count("create", "persistentvolumeclaims")
		claimDeletes += f.count("delete", "persistentvolumeclaims")
		showClaims(t, f)
		for _, a := range f.actions() {
			if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "pods" {
				podNames = append(podNames, c.GetObject().(metav1.Object).GetName())
			}
		}
		f.kube.ClearActions()
	}

	claims, err := f.kube.CoreV1().PersistentVolumeClaims(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 1 {
		t.Errorf("%d PVCs, want 1: the one made for the first refused pod, taken again by every attempt", len(claims.Items))
	}
	if claimCreates != 1 || claimDeletes != 0 {
		t.Errorf("%d PVCs created and %d deleted in 5 passes, want 1 created (once for its claim) and none deleted", claimCreates, claimDeletes)
	}
	for i, n := range podNames {
		if n != podNames[0] {
			t.Errorf("attempt %d created pod %s, want %s, whose PVC is there", i, n, podNames[0])
		}
	}
	if len(podNames) != 5 {
		t.Errorf("%d pod creations in 5 passes, want one a pass (slow start): %v", len(podNames), podNames)
	}
	failed := f.condition(appsv1beta1.CloneSetConditionFailedScale)
	if failed == nil || !strings.Contains(failed.Message, "exceeded quota") {
		t.Errorf("FailedScale condition %+v, want the quota's refusal", failed)
	}
	if ev := drain(f.recorder); !strings.Contains(ev, ReasonFailedCreate) || !strings.Contains(ev, "exceeded quota") {
		t.Errorf("events %q, want %s with the refusal", ev, ReasonFailedCreate)
	}
}

// Once the CloneSet no longer wants the pod, its stranded PVCs are cleaned up like any other.
func TestStrandedClaimsGoWhenNoLongerWanted(t *testing.T) {
	cs := cloneSet(1, "app:1", withClaimTemplate)
	f := newFixture(t, cs, nil)
	refusePods(f)
	if err := f.syncErr(); err == nil {
		t.Fatal("the refused pod's pass succeeded")
	}
	showClaims(t, f)

	scaled := cs.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](0)
	if err := f.ctrl.cloneSetIndex.Update(scaled); err != nil {
		t.Fatal(err)
	}
	f.kube.ClearActions()
	if err := f.syncErr(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got := f.count("delete", "persistentvolumeclaims"); got != 1 {
		t.Errorf("%d PVCs deleted, want the stranded one: %v", got, f.actions())
	}
	if got := f.ctrl.stranded.settle(testNS+"/web", sets.New[string](), 10); len(got) != 0 {
		t.Errorf("still remembered: %v", got)
	}
}

// The CloneSet gone, nothing is remembered of it.
func TestStrandedClaimsForgottenWithTheCloneSet(t *testing.T) {
	cs := cloneSet(1, "app:1", withClaimTemplate)
	f := newFixture(t, cs, nil)
	refusePods(f)
	_ = f.syncErr()
	if len(f.ctrl.stranded.ids) != 1 {
		t.Fatalf("remembered %v, want the refused pod's ID", f.ctrl.stranded.ids)
	}
	f.ctrl.cloneSetDeleted(cs)
	if len(f.ctrl.stranded.ids) != 0 {
		t.Errorf("remembered %v after the CloneSet went", f.ctrl.stranded.ids)
	}
}

func TestSettleStranded(t *testing.T) {
	ids := []string{"aaaaa", "bbbbb", "ccccc"}
	cases := []struct {
		name   string
		held   []string
		wanted int
		want   []string
	}{
		{name: "all kept while wanted", wanted: 5, want: ids},
		{name: "a pod took one", held: []string{"bbbbb"}, wanted: 5, want: []string{"aaaaa", "ccccc"}},
		{name: "fewer pods wanted: the oldest kept", wanted: 2, want: []string{"aaaaa", "bbbbb"}},
		{name: "none wanted", wanted: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := SettleStranded(ids, sets.New(tc.held...), tc.wanted)
			if len(got) != len(tc.want) || (len(got) > 0 && !reflect.DeepEqual(got, tc.want)) {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
}

// What is remembered of one CloneSet never exceeds a burst.
func TestStrandedClaimsAreBounded(t *testing.T) {
	s := newStrandedClaims()
	for i := 0; i < 3*workers.Burst; i++ {
		s.add("ns/web", fmt.Sprintf("id%d", i))
	}
	s.add("ns/web", "id0")
	if got := len(s.ids["ns/web"]); got != workers.Burst {
		t.Errorf("%d IDs remembered, want at most %d", got, workers.Burst)
	}
}

// Stranded IDs come first, but never one a pod holds or whose PVC is being deleted.
func TestInstanceIDsTakeStrandedFirst(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-held1", Labels: map[string]string{appsv1beta1.CloneSetInstanceID: "held1"}}}
	claim := func(id string, dying bool) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-web-" + id, Labels: map[string]string{appsv1beta1.CloneSetInstanceID: id}}}
		if dying {
			c.DeletionTimestamp = &metav1.Time{Time: t0}
		}
		return c
	}
	pvcs := []*corev1.PersistentVolumeClaim{claim("strnd", false), claim("dying", true), claim("held1", false)}
	got := InstanceIDs(3, []*corev1.Pod{pod}, pvcs, false, func() string { return "fresh" }, "held1", "dying", "strnd")
	if want := []string{"strnd", "fresh"}; !reflect.DeepEqual(got, want) {
		t.Errorf("IDs %v, want %v", got, want)
	}
}
