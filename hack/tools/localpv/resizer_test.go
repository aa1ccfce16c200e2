package main

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// boundPair is a claim of 8Mi bound to a volume of provisioner's, with size requested.
func boundPair(request string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	pvc := claim(request)
	pvc.Spec.VolumeName = "pvc-u1"
	pvc.Status = corev1.PersistentVolumeClaimStatus{
		Phase:    corev1.ClaimBound,
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Mi")},
		Conditions: []corev1.PersistentVolumeClaimCondition{
			{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue},
			{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue},
			{Type: "Other", Status: corev1.ConditionTrue},
		},
		AllocatedResourceStatuses: map[corev1.ResourceName]corev1.ClaimResourceStatus{
			corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInProgress,
		},
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-u1", Annotations: map[string]string{annProvisionedBy: provisionerName}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Mi")},
			ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: "data", UID: "u1"},
		},
	}
	return pvc, pv
}

func storage(l corev1.ResourceList) string {
	q, ok := l[corev1.ResourceStorage]
	if !ok {
		return "none"
	}
	return q.String()
}

func TestPlanResizeGrowsAClaimAskingForMore(t *testing.T) {
	pvc, pv := boundPair("32Mi")
	plan, ok := planResize(provisionerName, pvc, pv)
	if !ok {
		t.Fatal("a claim asking for more than its capacity is not resized")
	}
	if plan.volumeCapacity == nil || plan.volumeCapacity.String() != "32Mi" {
		t.Errorf("volume capacity %v, want 32Mi", plan.volumeCapacity)
	}
	st := plan.claimStatus
	if storage(st.Capacity) != "32Mi" || storage(st.AllocatedResources) != "32Mi" {
		t.Errorf("claim capacity %s, allocated %s: want 32Mi both", storage(st.Capacity), storage(st.AllocatedResources))
	}
	if len(st.Conditions) != 1 || st.Conditions[0].Type != "Other" {
		t.Errorf("conditions %v: want only the one not about resizing", st.Conditions)
	}
	if st.AllocatedResourceStatuses != nil {
		t.Errorf("allocated resource statuses %v, want none: no node expansion is pending", st.AllocatedResourceStatuses)
	}
	if storage(pvc.Status.Capacity) != "8Mi" || len(pvc.Status.Conditions) != 3 {
		t.Error("planResize changed the claim it was given")
	}
}

func TestPlanResizeKeepsALargerVolume(t *testing.T) {
	pvc, pv := boundPair("32Mi")
	pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("64Mi") // grown before a crash
	plan, ok := planResize(provisionerName, pvc, pv)
	if !ok || plan.volumeCapacity != nil || storage(plan.claimStatus.Capacity) != "64Mi" {
		t.Errorf("plan %+v, %v: want no volume write and the claim at the volume's 64Mi", plan, ok)
	}
}

func TestPlanResizeLeavesOtherClaimsAlone(t *testing.T) {
	cases := map[string]func(*corev1.PersistentVolumeClaim, *corev1.PersistentVolume){
		"no larger request": func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("8Mi")
		},
		"another provisioner's": func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) {
			v.Annotations[annProvisionedBy] = "example.com/other"
		},
		"statically provisioned":  func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) { v.Annotations = nil },
		"volume bound to another": func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) { v.Spec.ClaimRef.UID = "u2" },
		"volume not bound":        func(_ *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) { v.Spec.ClaimRef = nil },
		"claim not bound yet": func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
			c.Status.Phase = corev1.ClaimPending
		},
		"claim names another volume": func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) { c.Spec.VolumeName = "pvc-u9" },
	}
	for name, mutate := range cases {
		pvc, pv := boundPair("32Mi")
		mutate(pvc, pv)
		if plan, ok := planResize(provisionerName, pvc, pv); ok {
			t.Errorf("%s: resized (%+v)", name, plan)
		}
	}
	pvc, _ := boundPair("32Mi")
	if _, ok := planResize(provisionerName, pvc, nil); ok {
		t.Error("a claim whose volume is unknown: resized")
	}
}

func TestResizerSyncWritesVolumeThenClaim(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pvc, pv := boundPair("32Mi")
	client := fake.NewClientset(pvc, pv)
	factory := informers.NewSharedInformerFactory(client, 0)
	r := newResizer(ctx, client, provisionerName, factory.Core().V1().PersistentVolumeClaims(), factory.Core().V1().PersistentVolumes())
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	if err := r.sync(ctx, "ns/data"); err != nil {
		t.Fatal(err)
	}
	gotPV, _ := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-u1", metav1.GetOptions{})
	gotPVC, _ := client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "data", metav1.GetOptions{})
	if storage(gotPV.Spec.Capacity) != "32Mi" || storage(gotPVC.Status.Capacity) != "32Mi" || len(gotPVC.Status.Conditions) != 1 {
		t.Errorf("after sync: volume %s, claim %s with conditions %v; want 32Mi both and the resize conditions gone",
			storage(gotPV.Spec.Capacity), storage(gotPVC.Status.Capacity), gotPVC.Status.Conditions)
	}
	var writes []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "update" {
			writes = append(writes, a.GetResource().Resource+"/"+a.GetSubresource())
		}
	}
	if len(writes) != 2 || writes[0] != "persistentvolumes/" || writes[1] != "persistentvolumeclaims/status" {
		t.Errorf("writes %v: want the volume, then the claim's status", writes)
	}
	if err := r.sync(ctx, "ns/gone"); err != nil {
		t.Errorf("a claim that is gone: %v", err)
	}
}
