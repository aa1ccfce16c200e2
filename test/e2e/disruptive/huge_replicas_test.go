//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

const (
	// hugeCloneSetReplicas and hugeStatefulSetReplicas are what a tenant may write: OpenKruise
	// admits both, and so does kruise.
	hugeCloneSetReplicas    = 2000000
	hugeStatefulSetReplicas = 2147483647
	// hugeQuotaPods is the pod count the tenant's namespaces allow.
	hugeQuotaPods = 2
	// hugeRSSGrowth bounds how much the leader's resident memory may grow meanwhile. Planning
	// every pod of the CloneSet alone takes gigabytes; the caches of a few dozen new objects
	// take a few megabytes.
	hugeRSSGrowth = 64 << 20
	// hugeWatch is how long the leader is watched once both workloads were refused.
	hugeWatch = 30 * time.Second
)

// hugeNamespace is a namespace whose ResourceQuota allows hugeQuotaPods pods.
func hugeNamespace(ctx context.Context, t *testing.T, f *framework.Framework, prefix string) string {
	t.Helper()
	ns := f.NewNamespace(ctx, t, prefix)
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(hugeQuotaPods, resource.DecimalSI)}}}
	if _, err := f.Client.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the ResourceQuota of %s: %v", ns, err)
	}
	framework.WaitFor(ctx, t, time.Minute, "the quota of "+ns+" counted", func(ctx context.Context) (bool, string, error) {
		q, err := f.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "pods", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		_, counted := q.Status.Hard[corev1.ResourcePods]
		return counted, fmt.Sprintf("status %+v", q.Status), nil
	})
	return ns
}

// TestHugeReplicasDoNotTakeTheControllerDown: a tenant writes replicas 2,000,000 on a CloneSet
// (with a volume claim template) and 2147483647 on a Parallel Advanced StatefulSet, each in a
// namespace whose ResourceQuota allows two pods. kruise creates what the quota allows and says in
// status and an Event why the rest cannot be; the CloneSet keeps the PVCs of the pods refused
// rather than deleting and creating them again. Meanwhile kruise goes on serving everyone else:
// the leader's memory stays flat, it stays leader and never restarts, and another namespace's
// CloneSet rolls out.
func TestHugeReplicasDoNotTakeTheControllerDown(t *testing.T) {
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 12*time.Minute)
	pods := leaderWaitReplicasAvailable(ctx, t, f, 3*time.Minute)
	leader, lease := leaderCurrent(ctx, t, f, pods)
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	restarts := f.KruiseRestarts(ctx, t)
	rssBefore, err := framework.ControllerRSS(leader.Name)
	if err != nil {
		t.Fatal(err)
	}
	maxRSS := rssBefore
	sample := func() string {
		rss, err := framework.ControllerRSS(leader.Name)
		if err != nil {
			t.Fatalf("the leader %s is gone: %v", leader.Name, err)
		}
		maxRSS = max(maxRSS, rss)
		if maxRSS > rssBefore+hugeRSSGrowth {
			t.Fatalf("the leader's resident memory grew from %d MiB to %d MiB", rssBefore>>20, maxRSS>>20)
		}
		return fmt.Sprintf("leader RSS %d MiB (%d MiB before)", rss>>20, rssBefore>>20)
	}

	csNS := hugeNamespace(ctx, t, f, "hugecs")
	cs := hugeCloneSet(f, csNS)
	if _, err := kc.AppsV1beta1().CloneSets(csNS).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CloneSet of %d replicas (OpenKruise admits it): %v", hugeCloneSetReplicas, err)
	}
	stsNS := hugeNamespace(ctx, t, f, "hugests")
	sts := hugeStatefulSet(f, stsNS)
	if _, err := kc.AppsV1beta1().StatefulSets(stsNS).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the StatefulSet of %d replicas (OpenKruise admits it): %v", int64(hugeStatefulSetReplicas), err)
	}

	framework.WaitFor(ctx, t, 3*time.Minute, "both workloads at their quota, saying why in status", func(ctx context.Context) (bool, string, error) {
		rss := sample()
		c, err := kc.AppsV1beta1().CloneSets(csNS).Get(ctx, cs.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s, err := kc.AppsV1beta1().StatefulSets(stsNS).Get(ctx, sts.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		csFailed := cloneSetCondition(c, appsv1beta1.CloneSetConditionFailedScale)
		stsFailed := statefulSetCondition(s, appsv1beta1.FailedCreatePod)
		desc := fmt.Sprintf("%s; CloneSet replicas %d, %q; StatefulSet replicas %d, %q", rss, c.Status.Replicas, csFailed, s.Status.Replicas, stsFailed)
		return c.Status.Replicas == hugeQuotaPods && s.Status.Replicas == hugeQuotaPods &&
			strings.Contains(csFailed, "exceeded quota") && strings.Contains(stsFailed, "exceeded quota"), desc, nil
	})
	for _, ns := range []string{csNS, stsNS} {
		framework.WaitFor(ctx, t, time.Minute, "a FailedCreate Event in "+ns, func(ctx context.Context) (bool, string, error) {
			evs, err := f.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedCreate"})
			if err != nil {
				return false, "", err
			}
			for _, e := range evs.Items {
				if strings.Contains(e.Message, "exceeded quota") {
					return true, e.Message, nil
				}
			}
			return false, fmt.Sprintf("%d FailedCreate Events", len(evs.Items)), nil
		})
	}
	claims := hugeClaims(ctx, t, f, csNS)

	// Another tenant's rollout completes meanwhile.
	otherNS := f.NewNamespace(ctx, t, "neighbour")
	other := hugeCloneSet(f, otherNS)
	other.Spec.Replicas = ptr.To[int32](2)
	other.Spec.VolumeClaimTemplates = nil
	if _, err := kc.AppsV1beta1().CloneSets(otherNS).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the neighbour's CloneSet: %v", err)
	}
	waitCloneSetSettled(ctx, t, kc, otherNS, other.Name, 2, sample)
	variant := f.BusyboxVariant(t)
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, variant)
	if _, err := kc.AppsV1beta1().CloneSets(otherNS).Patch(ctx, other.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("updating the neighbour's image: %v", err)
	}
	waitCloneSetSettled(ctx, t, kc, otherNS, other.Name, 2, sample)

	framework.Consistently(ctx, t, hugeWatch, "the leader flat, leading, its huge tenants' PVCs kept", func(ctx context.Context) (bool, string, error) {
		rss := sample()
		l, err := f.Client.CoordinationV1().Leases(framework.KruiseNamespace).Get(ctx, leaderLease, metav1.GetOptions{})
		if err != nil {
			return false, "", framework.Retry(err)
		}
		if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != holder {
			return false, fmt.Sprintf("the Lease moved from %s to %s", holder, h), nil
		}
		now := hugeClaims(ctx, t, f, csNS)
		for uid, name := range claims {
			if _, ok := now[uid]; !ok {
				return false, fmt.Sprintf("PVC %s was deleted: claims %v, were %v", name, now, claims), nil
			}
		}
		if len(now) > len(claims)+1 {
			return false, fmt.Sprintf("PVCs keep being created: %d, were %d", len(now), len(claims)), nil
		}
		return true, rss, nil
	})
	f.RequireNoRestarts(ctx, t, restarts)
	t.Logf("leader %s: resident memory %d MiB before, at most %d MiB with the huge workloads", leader.Name, rssBefore>>20, maxRSS>>20)
}

func hugeCloneSet(f *framework.Framework, ns string) *appsv1beta1.CloneSet {
	labels := map[string]string{"app": "huge"}
	return &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "huge", Namespace: ns},
		Spec: appsv1beta1.CloneSetSpec{
			Replicas: ptr.To[int32](hugeCloneSetReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{f.BusyboxContainer("main")}, TerminationGracePeriodSeconds: ptr.To[int64](1)},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}},
			}},
			UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{PodUpdatePolicy: appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
					MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
		},
	}
}

func hugeStatefulSet(f *framework.Framework, ns string) *appsv1beta1.StatefulSet {
	labels := map[string]string{"app": "huge"}
	return &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "huge", Namespace: ns},
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas:            ptr.To[int32](hugeStatefulSetReplicas),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{f.BusyboxContainer("main")}, TerminationGracePeriodSeconds: ptr.To[int64](1)},
			},
		},
	}
}

// hugeClaims are the PVCs of namespace ns, by UID.
func hugeClaims(ctx context.Context, t *testing.T, f *framework.Framework, ns string) map[types.UID]string {
	t.Helper()
	list, err := f.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the PVCs of %s: %v", ns, err)
	}
	out := map[types.UID]string{}
	for _, c := range list.Items {
		if c.DeletionTimestamp == nil {
			out[c.UID] = c.Name
		}
	}
	return out
}

// waitCloneSetSettled waits until CloneSet ns/name has observed its generation and has want
// pods, all updated and ready; each poll also calls sample (which fails the test on its own).
func waitCloneSetSettled(ctx context.Context, t *testing.T, kc versioned.Interface, ns, name string, want int32, sample func() string) {
	t.Helper()
	framework.WaitFor(ctx, t, 3*time.Minute, fmt.Sprintf("CloneSet %s/%s with %d pods updated and ready", ns, name, want), func(ctx context.Context) (bool, string, error) {
		rss := sample()
		cs, err := kc.AppsV1beta1().CloneSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := cs.Status
		return s.ObservedGeneration == cs.Generation && s.Replicas == want && s.UpdatedReplicas == want && s.UpdatedReadyReplicas == want,
			fmt.Sprintf("%s; status %+v", rss, s), nil
	})
}

func cloneSetCondition(cs *appsv1beta1.CloneSet, ct appsv1beta1.CloneSetConditionType) string {
	for _, c := range cs.Status.Conditions {
		if c.Type == ct && c.Status == corev1.ConditionTrue {
			return c.Message
		}
	}
	return ""
}

func statefulSetCondition(s *appsv1beta1.StatefulSet, ct appsv1.StatefulSetConditionType) string {
	for _, c := range s.Status.Conditions {
		if c.Type == ct && c.Status == corev1.ConditionTrue {
			return c.Message
		}
	}
	return ""
}
