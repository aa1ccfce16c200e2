//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// The tests here need gates StatefulSetAutoResizePVCGate and
// RecreatePodWhenChangeVCTInCloneSetGate, which the local overlay turns on.

// growPatch is the JSON patch that sets the storage request of the first volume claim template.
func growPatch(size string) []byte {
	return []byte(fmt.Sprintf(`[{"op":"replace","path":"/spec/volumeClaimTemplates/0/spec/resources/requests/storage","value":%q}]`, size))
}

// localClass creates a StorageClass of the local provisioner named after the test's namespace,
// expandable or not, deleted when the test ends (classes are cluster-wide).
func localClass(ctx context.Context, t *testing.T, f *framework.Framework, ns string, expandable bool) string {
	t.Helper()
	name := "e2e-" + ns
	binding := storagev1.VolumeBindingWaitForFirstConsumer
	_, err := f.Client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: name},
		Provisioner:          "kruise.local/localpv",
		VolumeBindingMode:    &binding,
		AllowVolumeExpansion: ptr.To(expandable),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating StorageClass %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = f.Client.StorageV1().StorageClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// claimSet is an Advanced StatefulSet of replicas busybox pods, each with a PVC from template
// "data" (8Mi, of class, the default when empty) under volumeClaimUpdateStrategy OnPodRollingUpdate.
func claimSet(f *framework.Framework, ns, name string, replicas int32, class string) *appsv1beta1.StatefulSet {
	set := busyboxStatefulSet(f, ns, name, replicas)
	set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	set.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	set.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	vct := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Mi")}},
		},
	}
	if class != "" {
		vct.Spec.StorageClassName = &class
	}
	set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{vct}
	set.Spec.VolumeClaimUpdateStrategy.Type = appsv1beta1.OnPodRollingUpdateVolumeClaimUpdateStrategyType
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType}
	return set
}

// waitVolumeClaims waits until the set's status (of its latest generation) counts want for
// template "data".
func waitVolumeClaims(ctx context.Context, t *testing.T, kc versioned.Interface, ns, name string, want appsv1beta1.VolumeClaimStatus) *appsv1beta1.StatefulSet {
	t.Helper()
	var set *appsv1beta1.StatefulSet
	framework.WaitFor(ctx, t, cloneSetTimeout, fmt.Sprintf("status.volumeClaims %+v", want), func(ctx context.Context) (bool, string, error) {
		var err error
		if set, err = kc.AppsV1beta1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, "", err
		}
		vc := set.Status.VolumeClaims
		return set.Status.ObservedGeneration == set.Generation && len(vc) == 1 && vc[0] == want, fmt.Sprintf("%+v", vc), nil
	})
	return set
}

func claimRequest(c *corev1.PersistentVolumeClaim) resource.Quantity {
	return c.Spec.Resources.Requests[corev1.ResourceStorage]
}

func claimCapacity(c *corev1.PersistentVolumeClaim) resource.Quantity {
	return c.Status.Capacity[corev1.ResourceStorage]
}

// A storage request grown in an Advanced StatefulSet's claim template, under
// volumeClaimUpdateStrategy OnPodRollingUpdate, grows each pod's PVC (localpv's class allows
// expansion): the PVCs request and get 16Mi, the pods are not recreated, and status.volumeClaims
// counts both pods' claims compatible and ready.
func TestStatefulSetClaimsExpanded(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "vct-asts")

	if _, err := kc.AppsV1beta1().StatefulSets(ns).Create(ctx, claimSet(f, ns, "db", 2, ""), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
	waitStatefulSet(ctx, t, f, kc, ns, "db", "db-0", "db-1")
	waitVolumeClaims(ctx, t, kc, ns, "db", appsv1beta1.VolumeClaimStatus{VolumeClaimName: "data", CompatibleReplicas: 2, CompatibleReadyReplicas: 2})
	before := stsPods(ctx, t, f, ns, "db")

	if _, err := kc.AppsV1beta1().StatefulSets(ns).Patch(ctx, "db", types.JSONPatchType, growPatch("16Mi"), metav1.PatchOptions{}); err != nil {
		t.Fatalf("growing the claim template: %v", err)
	}
	want := resource.MustParse("16Mi")
	for _, claim := range []string{"data-db-0", "data-db-1"} {
		f.WaitClaim(ctx, t, ns, claim, cloneSetTimeout, "expanded to 16Mi", func(c *corev1.PersistentVolumeClaim) bool {
			req, got := claimRequest(c), claimCapacity(c)
			return req.Cmp(want) == 0 && got.Cmp(want) == 0
		})
	}
	waitVolumeClaims(ctx, t, kc, ns, "db", appsv1beta1.VolumeClaimStatus{VolumeClaimName: "data", CompatibleReplicas: 2, CompatibleReadyReplicas: 2})
	after := waitStatefulSet(ctx, t, f, kc, ns, "db", "db-0", "db-1")
	for name, p := range stsPods(ctx, t, f, ns, "db") {
		if before[name].UID != p.UID {
			t.Errorf("pod %s was recreated (UID %s, was %s): expanding its PVC needs no new pod", name, p.UID, before[name].UID)
		}
	}
	for _, c := range after.Status.Conditions {
		if string(c.Type) == "FailedResizeVolumeClaims" {
			t.Errorf("condition %s %s: %s; nothing was refused", c.Type, c.Status, c.Message)
		}
	}
	f.WaitObjectEvent(ctx, t, ns, "StatefulSet", "db", "SuccessfulResize", 30*time.Second, "data-db-0")
}

// A storage request grown where the class forbids expansion (allowVolumeExpansion false): the
// API server refuses the PVC's patch; the set says so in condition FailedResizeVolumeClaims and
// one Warning Event FailedResize, and does not try again in a loop: after another pass (a scale
// out, whose new pod gets a PVC of the new size at once) the event has not repeated and the old
// PVC is untouched.
func TestStatefulSetClaimExpansionRefused(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "vct-fixed")
	class := localClass(ctx, t, f, ns, false)

	if _, err := kc.AppsV1beta1().StatefulSets(ns).Create(ctx, claimSet(f, ns, "db", 1, class), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
	waitStatefulSet(ctx, t, f, kc, ns, "db", "db-0")
	if _, err := kc.AppsV1beta1().StatefulSets(ns).Patch(ctx, "db", types.JSONPatchType, growPatch("16Mi"), metav1.PatchOptions{}); err != nil {
		t.Fatalf("growing the claim template: %v", err)
	}
	var set *appsv1beta1.StatefulSet
	framework.WaitFor(ctx, t, cloneSetTimeout, "condition FailedResizeVolumeClaims naming data-db-0", func(ctx context.Context) (bool, string, error) {
		var err error
		if set, err = kc.AppsV1beta1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{}); err != nil {
			return false, "", err
		}
		for _, c := range set.Status.Conditions {
			if string(c.Type) == "FailedResizeVolumeClaims" {
				return c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "data-db-0"), c.Message, nil
			}
		}
		return false, fmt.Sprintf("conditions %+v", set.Status.Conditions), nil
	})
	f.WaitObjectEvent(ctx, t, ns, "StatefulSet", "db", "FailedResize", 30*time.Second, "data-db-0")
	claim, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	if _, err := kc.AppsV1beta1().StatefulSets(ns).Patch(ctx, "db", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("scaling out: %v", err)
	}
	waitStatefulSet(ctx, t, f, kc, ns, "db", "db-0", "db-1")
	// db-1's PVC is made from the grown template; db-0's stays refused.
	waitVolumeClaims(ctx, t, kc, ns, "db", appsv1beta1.VolumeClaimStatus{VolumeClaimName: "data", CompatibleReplicas: 1, CompatibleReadyReplicas: 1})
	events, err := f.ObjectEvents(ctx, ns, "StatefulSet", "db")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Reason == "FailedResize" && e.Count > 1 {
			t.Errorf("event FailedResize recorded %d times: the refused expansion was tried again (%s)", e.Count, e.Message)
		}
	}
	again, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if req := claimRequest(again); again.ResourceVersion != claim.ResourceVersion || req.String() != "8Mi" {
		t.Errorf("data-db-0 changed (resourceVersion %s, was %s; request %s): want it left at 8Mi", again.ResourceVersion, claim.ResourceVersion, req.String())
	}
}

// clonePodClaims are the PVCs of CloneSet name by name.
func clonePodClaims(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string) map[string]corev1.PersistentVolumeClaim {
	t.Helper()
	list, err := f.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatalf("listing PVCs: %v", err)
	}
	out := map[string]corev1.PersistentVolumeClaim{}
	for _, c := range list.Items {
		if c.DeletionTimestamp == nil {
			out[c.Name] = c
		}
	}
	return out
}

// A CloneSet's claim template moved to another storage class along with an image change: the
// pods' PVCs can no longer match it, so the pods are recreated rather than updated in place
// (RecreatePodWhenChangeVCTInCloneSetGate), each with a new PVC of the new class; the old PVCs go.
func TestCloneSetClaimTemplateChangeRecreates(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "vct-cs")
	class := localClass(ctx, t, f, ns, true)

	cs := dataCloneSet(f, ns, "web", 2)
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	createCloneSet(ctx, t, kc, cs)
	before := waitPodsSettled(ctx, t, f, kc, ns, "web", 2)
	oldClaims := clonePodClaims(ctx, t, f, ns, "web")
	var uids []types.UID
	for _, p := range before {
		uids = append(uids, p.UID)
	}

	patch := fmt.Sprintf(`[{"op":"add","path":"/spec/volumeClaimTemplates/0/spec/storageClassName","value":%q},`+
		`{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, class, f.BusyboxVariant(t))
	mustPatchCloneSet(ctx, t, kc, ns, "web", patch)
	after := waitPodsSettled(ctx, t, f, kc, ns, "web", 2, uids...)
	var claims map[string]corev1.PersistentVolumeClaim
	framework.WaitFor(ctx, t, cloneSetTimeout, "only the new pods' PVCs, of class "+class, func(ctx context.Context) (bool, string, error) {
		claims = clonePodClaims(ctx, t, f, ns, "web")
		var desc []string
		ok := len(claims) == 2
		for n, c := range claims {
			got := ptr.Deref(c.Spec.StorageClassName, "")
			desc = append(desc, n+":"+got)
			if _, old := oldClaims[n]; old || got != class {
				ok = false
			}
		}
		return ok, strings.Join(desc, ","), nil
	})
	for name, p := range after {
		claim := checkPodClaim(ctx, t, f, "web", &p)
		if _, old := oldClaims[claim.Name]; old {
			t.Errorf("pod %s kept the old PVC %s", name, claim.Name)
		}
	}
}

// A CloneSet's claim template storage request grown: each pod's PVC is expanded to it in place,
// the pods stay (no revision changes: a claim's size is no pod update).
func TestCloneSetClaimsExpanded(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "vct-grow")

	cs := dataCloneSet(f, ns, "web", 2)
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	createCloneSet(ctx, t, kc, cs)
	before := waitPodsSettled(ctx, t, f, kc, ns, "web", 2)
	mustPatchCloneSet(ctx, t, kc, ns, "web", string(growPatch("16Mi")))
	want := resource.MustParse("16Mi")
	for _, p := range before {
		claim := fmt.Sprintf("data-web-%s", p.Labels[appsv1alpha1.CloneSetInstanceID])
		f.WaitClaim(ctx, t, ns, claim, cloneSetTimeout, "expanded to 16Mi", func(c *corev1.PersistentVolumeClaim) bool {
			req, got := claimRequest(c), claimCapacity(c)
			return req.Cmp(want) == 0 && got.Cmp(want) == 0
		})
	}
	after := waitPodsSettled(ctx, t, f, kc, ns, "web", 2)
	for name, p := range after {
		if before[name].UID != p.UID {
			t.Errorf("pod %s was recreated: expanding its PVC needs no new pod", name)
		}
	}
}
