//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// busyboxStatefulSet is a v1beta1 StatefulSet of replicas busybox pods labelled app=name.
func busyboxStatefulSet(f *framework.Framework, ns, name string, replicas int32) *appsv1beta1.StatefulSet {
	return &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1beta1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name: "main", Image: f.Image("public/busybox:1.35"), Command: []string{"sh", "-c", sleeper},
					}},
				},
			},
		},
	}
}

// stsPods are the pods of StatefulSet name by name.
func stsPods(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string) map[string]corev1.Pod {
	t.Helper()
	out := map[string]corev1.Pod{}
	for _, p := range clonePods(ctx, t, f, ns, name) {
		out[p.Name] = p
	}
	return out
}

// waitStatefulSet waits until StatefulSet name reports want pods, all updated and available at
// one revision, and exactly the pods named wantPods exist (none being deleted).
func waitStatefulSet(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, ns, name string, wantPods ...string) *appsv1beta1.StatefulSet {
	t.Helper()
	want := int32(len(wantPods))
	sort.Strings(wantPods)
	var set *appsv1beta1.StatefulSet
	framework.WaitFor(ctx, t, cloneSetTimeout, fmt.Sprintf("StatefulSet %s with pods %v updated and available", name, wantPods), func(ctx context.Context) (bool, string, error) {
		var err error
		if set, err = kc.AppsV1beta1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, "", err
		}
		var got []string
		for n, p := range stsPods(ctx, t, f, ns, name) {
			if p.DeletionTimestamp != nil {
				n += "(terminating)"
			}
			got = append(got, n)
		}
		sort.Strings(got)
		s := set.Status
		ok := s.ObservedGeneration == set.Generation && s.Replicas == want && s.UpdatedReplicas == want && s.ReadyReplicas == want &&
			s.AvailableReplicas == want && s.CurrentRevision == s.UpdateRevision && strings.Join(got, ",") == strings.Join(wantPods, ",")
		return ok, fmt.Sprintf("pods %v, status %+v", got, s), nil
	})
	return set
}

// Identity, ordered scaling and storage as the built-in StatefulSet: pods web-0..2 created one
// after another once the previous is Ready, each with its own PVC data-web-<n>; an image update
// in place keeps every pod (UID, IP) and its PVC; scaling in removes the highest ordinals first,
// one at a time, and with whenScaled=Delete only their PVCs.
func TestStatefulSetOrderedIdentityInPlaceAndScaleIn(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 8*time.Minute)
	ns := f.NewNamespace(ctx, t, "asts")
	variant := f.BusyboxVariant(t)

	set := busyboxStatefulSet(f, ns, "web", 3)
	set.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	set.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Mi")}},
		},
	}}
	set.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{PodUpdatePolicy: appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType}
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType}
	if _, err := kc.AppsV1beta1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
	waitStatefulSet(ctx, t, f, kc, ns, "web", "web-0", "web-1", "web-2")

	before := stsPods(ctx, t, f, ns, "web")
	claims := map[string]types.UID{}
	for o := 0; o < 3; o++ {
		name := fmt.Sprintf("web-%d", o)
		p := before[name]
		if p.Labels[appsv1.StatefulSetPodNameLabel] != name || p.Labels[appsv1.PodIndexLabel] != fmt.Sprint(o) ||
			p.Spec.Hostname != name || p.Spec.Subdomain != "web" {
			t.Errorf("pod %s: labels %v, hostname %q, subdomain %q: want the StatefulSet identity", name, p.Labels, p.Spec.Hostname, p.Spec.Subdomain)
		}
		claim := fmt.Sprintf("data-web-%d", o)
		mounted := ""
		for _, v := range p.Spec.Volumes {
			if v.Name == "data" && v.PersistentVolumeClaim != nil {
				mounted = v.PersistentVolumeClaim.ClaimName
			}
		}
		if mounted != claim {
			t.Errorf("pod %s mounts %q, want %s", name, mounted, claim)
		}
		pvc, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading PVC %s: %v", claim, err)
		}
		claims[claim] = pvc.UID
		if o == 0 {
			continue
		}
		// OrderedReady: a pod is created only once its predecessor is Ready.
		prev := before[fmt.Sprintf("web-%d", o-1)]
		var readyAt metav1.Time
		for _, c := range prev.Status.Conditions {
			if c.Type == corev1.PodReady {
				readyAt = c.LastTransitionTime
			}
		}
		if p.CreationTimestamp.Before(&readyAt) {
			t.Errorf("pod %s created at %v, before %s was Ready at %v", name, p.CreationTimestamp, prev.Name, readyAt)
		}
	}

	// In place: a new image keeps the pods, their IPs and their PVCs.
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, variant)
	if _, err := kc.AppsV1beta1().StatefulSets(ns).Patch(ctx, "web", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the image: %v", err)
	}
	framework.WaitFor(ctx, t, cloneSetTimeout, "every pod at the new image", func(ctx context.Context) (bool, string, error) {
		pods := stsPods(ctx, t, f, ns, "web")
		var at []string
		for n, p := range pods {
			if p.Spec.Containers[0].Image == variant {
				at = append(at, n)
			}
		}
		return len(at) == 3, fmt.Sprintf("at the new image: %v", at), nil
	})
	waitStatefulSet(ctx, t, f, kc, ns, "web", "web-0", "web-1", "web-2")
	for n, p := range stsPods(ctx, t, f, ns, "web") {
		old := before[n]
		if p.UID != old.UID || p.Status.PodIP != old.Status.PodIP {
			t.Errorf("pod %s (uid %s, IP %s) was %s at %s: an in-place update keeps the pod", n, p.UID, p.Status.PodIP, old.UID, old.Status.PodIP)
		}
	}
	for claim, uid := range claims {
		pvc, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		if err != nil || pvc.UID != uid {
			t.Errorf("PVC %s after the in-place update: %v (uid %v, was %s)", claim, err, pvcUID(pvc), uid)
		}
	}

	// Scale in to 1: web-2 goes before web-1 is touched, and only their PVCs go.
	if _, err := kc.AppsV1beta1().StatefulSets(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("scaling to 1: %v", err)
	}
	framework.WaitFor(ctx, t, cloneSetTimeout, "web-1 and web-2 gone, highest first", func(ctx context.Context) (bool, string, error) {
		pods := stsPods(ctx, t, f, ns, "web")
		w1, has1 := pods["web-1"]
		if _, has2 := pods["web-2"]; has2 && has1 && w1.DeletionTimestamp != nil {
			t.Fatalf("web-1 is being deleted while web-2 still exists: OrderedReady scales in from the highest ordinal, one at a time")
		}
		_, has2 := pods["web-2"]
		return !has1 && !has2, fmt.Sprintf("%d pods", len(pods)), nil
	})
	waitStatefulSet(ctx, t, f, kc, ns, "web", "web-0")
	framework.WaitFor(ctx, t, cloneSetTimeout, "PVCs data-web-1 and data-web-2 deleted, data-web-0 kept", func(ctx context.Context) (bool, string, error) {
		var left []string
		for _, claim := range []string{"data-web-0", "data-web-1", "data-web-2"} {
			_, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
			if err == nil {
				left = append(left, claim)
			} else if !apierrors.IsNotFound(err) {
				return false, "", err
			}
		}
		return strings.Join(left, ",") == "data-web-0", fmt.Sprintf("PVCs left: %v", left), nil
	})
	pvc, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-web-0", metav1.GetOptions{})
	if err != nil || pvc.UID != claims["data-web-0"] {
		t.Errorf("data-web-0 after scaling in: %v (uid %v), want the PVC from before", err, pvcUID(pvc))
	}
}

func pvcUID(pvc *corev1.PersistentVolumeClaim) types.UID {
	if pvc == nil {
		return ""
	}
	return pvc.UID
}

// ordinals.start=3 gives pods web-3..5 (Parallel); a partition of 2 updates only the highest
// ordinal (the canary), a partition of 0 the rest; moving start down moves the pods.
func TestStatefulSetStartOrdinalAndPartition(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 8*time.Minute)
	ns := f.NewNamespace(ctx, t, "asts-canary")

	set := busyboxStatefulSet(f, ns, "web", 3)
	set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	set.Spec.Ordinals = &appsv1beta1.StatefulSetOrdinals{Start: 3}
	if _, err := kc.AppsV1beta1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
	first := waitStatefulSet(ctx, t, f, kc, ns, "web", "web-3", "web-4", "web-5")

	// Canary: partition 2 keeps two pods at the old revision; the highest ordinal is updated.
	if _, err := kc.AppsV1beta1().StatefulSets(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("partition 2: %v", err)
	}
	patch := `[{"op":"add","path":"/spec/template/spec/containers/0/env","value":[{"name":"MODE","value":"b"}]}]`
	if _, err := kc.AppsV1beta1().StatefulSets(ns).Patch(ctx, "web", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the env: %v", err)
	}
	framework.WaitFor(ctx, t, cloneSetTimeout, "web-5 updated, web-3 and web-4 not", func(ctx context.Context) (bool, string, error) {
		s, err := kc.AppsV1beta1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		pods := stsPods(ctx, t, f, ns, "web")
		revs := map[string]string{}
		for n, p := range pods {
			revs[n] = p.Labels[appsv1.ControllerRevisionHashLabelKey]
		}
		upd := s.Status.UpdateRevision
		ok := upd != first.Status.UpdateRevision && len(pods) == 3 && revs["web-5"] == upd && pods["web-5"].DeletionTimestamp == nil &&
			revs["web-4"] == first.Status.UpdateRevision && revs["web-3"] == first.Status.UpdateRevision &&
			s.Status.UpdatedReplicas == 1 && s.Status.UpdatedAvailableReplicas == 1 && s.Status.AvailableReplicas == 3
		return ok, fmt.Sprintf("revisions %v, status %+v", revs, s.Status), nil
	})
	for _, n := range []string{"web-3", "web-4"} {
		if p := stsPods(ctx, t, f, ns, "web")[n]; p.UID == "" {
			t.Errorf("pod %s missing during the canary", n)
		}
	}

	// Full rollout.
	if _, err := kc.AppsV1beta1().StatefulSets(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("partition 0: %v", err)
	}
	waitStatefulSet(ctx, t, f, kc, ns, "web", "web-3", "web-4", "web-5")
	for n, p := range stsPods(ctx, t, f, ns, "web") {
		if len(p.Spec.Containers[0].Env) != 1 {
			t.Errorf("pod %s env %v after the full rollout", n, p.Spec.Containers[0].Env)
		}
	}

	// Moving start to 1 moves the pods: web-1..3 run, web-4 and web-5 go.
	if _, err := kc.AppsV1beta1().StatefulSets(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"ordinals":{"start":1}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("moving start: %v", err)
	}
	waitStatefulSet(ctx, t, f, kc, ns, "web", "web-1", "web-2", "web-3")
}

// reserveOrdinals skips ordinals (replicas still met on the next free ones); the specified-delete
// label recreates a pod under its name with its PVC; whenDeleted=Delete deletes the PVCs with the
// set.
func TestStatefulSetReservedSpecifiedDeleteAndWhenDeleted(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 8*time.Minute)
	ns := f.NewNamespace(ctx, t, "asts-reserve")

	set := busyboxStatefulSet(f, ns, "db", 3)
	set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	set.Spec.ReserveOrdinals = []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("3-4")}
	set.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	set.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Mi")}},
		},
	}}
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType}
	if _, err := kc.AppsV1beta1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
	waitStatefulSet(ctx, t, f, kc, ns, "db", "db-0", "db-2", "db-5")

	victim := stsPods(ctx, t, f, ns, "db")["db-2"]
	claim, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-2", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading PVC data-db-2: %v", err)
	}
	label := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, appsv1beta1.SpecifiedDeleteKey)
	if _, err := f.Client.CoreV1().Pods(ns).Patch(ctx, "db-2", types.MergePatchType, []byte(label), metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling db-2 for deletion: %v", err)
	}
	framework.WaitFor(ctx, t, cloneSetTimeout, "db-2 recreated", func(ctx context.Context) (bool, string, error) {
		p, ok := stsPods(ctx, t, f, ns, "db")["db-2"]
		return ok && p.UID != victim.UID, fmt.Sprintf("db-2 present %v", ok), nil
	})
	waitStatefulSet(ctx, t, f, kc, ns, "db", "db-0", "db-2", "db-5")
	if p := stsPods(ctx, t, f, ns, "db")["db-2"]; p.Labels[appsv1beta1.SpecifiedDeleteKey] != "" {
		t.Errorf("the new db-2 carries the specified-delete label: %v", p.Labels)
	}
	if again, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-2", metav1.GetOptions{}); err != nil || again.UID != claim.UID {
		t.Errorf("data-db-2 after the recreate: %v (uid %v), want the same PVC %s", err, pvcUID(again), claim.UID)
	}

	if err := kc.AppsV1beta1().StatefulSets(ns).Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the StatefulSet: %v", err)
	}
	framework.WaitFor(ctx, t, cloneSetTimeout, "the PVCs deleted with the set", func(ctx context.Context) (bool, string, error) {
		list, err := f.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var left []string
		for _, c := range list.Items {
			left = append(left, c.Name)
		}
		return len(left) == 0, fmt.Sprintf("PVCs left: %v", left), nil
	})
}

// A v1alpha1 StatefulSet (OpenKruise's deprecated version, still served) runs as well: the
// controller works on the stored v1beta1, the pods are the same; it scales through the scale
// subresource.
func TestStatefulSetV1alpha1(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "asts-v1alpha1")

	b := busyboxStatefulSet(f, ns, "web", 2)
	set := &appsv1alpha1.StatefulSet{
		ObjectMeta: b.ObjectMeta,
		Spec: appsv1alpha1.StatefulSetSpec{
			Replicas: b.Spec.Replicas, Selector: b.Spec.Selector, Template: b.Spec.Template, ServiceName: b.Spec.ServiceName,
		},
	}
	if _, err := kc.AppsV1alpha1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the v1alpha1 StatefulSet: %v", err)
	}
	waitStatefulSet(ctx, t, f, kc, ns, "web", "web-0", "web-1")
	got, err := kc.AppsV1alpha1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the v1alpha1 StatefulSet: %v", err)
	}
	if got.Status.ReadyReplicas != 2 || got.Status.UpdateRevision == "" {
		t.Errorf("v1alpha1 status %+v: want 2 ready replicas and an update revision", got.Status)
	}

	// The scale subresource, as kubectl scale and an HPA use it.
	scale, err := kc.AppsV1beta1().StatefulSets(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the scale subresource: %v", err)
	}
	if scale.Status.Replicas != 2 || scale.Status.Selector != "app=web" {
		t.Errorf("scale status %+v: want 2 replicas and selector app=web", scale.Status)
	}
	scale.Spec.Replicas = 3
	if _, err := kc.AppsV1beta1().StatefulSets(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("scaling to 3: %v", err)
	}
	waitStatefulSet(ctx, t, f, kc, ns, "web", "web-0", "web-1", "web-2")
}
