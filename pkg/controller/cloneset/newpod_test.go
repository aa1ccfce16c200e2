package cloneset

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/unit/gen"
)

func recipe() PodRecipe {
	return PodRecipe{
		Owner:     metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web", UID: "u1", Controller: ptrTrue()},
		Namespace: "ns",
		CloneSet:  "web",
		Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "busybox"}},
				Volumes: []corev1.Volume{
					{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				},
			},
		},
		ClaimTemplates: []corev1.PersistentVolumeClaim{
			{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "logs", Labels: map[string]string{"kind": "logs"}}},
		},
		MatchLabels: map[string]string{"app": "web"},
		Revision:    "web-6d9f7c",
	}
}

func ptrTrue() *bool { b := true; return &b }

func TestNewPod(t *testing.T) {
	r := recipe()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	pod := NewPod(r, "abcde", now)

	if pod.Name != "web-abcde" || pod.Namespace != "ns" {
		t.Errorf("pod %s/%s, want ns/web-abcde", pod.Namespace, pod.Name)
	}
	wantLabels := map[string]string{
		"app": "web", appsv1beta1.CloneSetInstanceID: "abcde", "controller-revision-hash": "web-6d9f7c",
		PodTemplateHashLabel: "6d9f7c", pub.LifecycleStateKey: "PreparingNormal",
	}
	if !reflect.DeepEqual(pod.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", pod.Labels, wantLabels)
	}
	if got := pod.Annotations[pub.LifecycleTimestampKey]; got != "2026-11-26T12:00:00Z" {
		t.Errorf("lifecycle timestamp %q", got)
	}
	if g := pod.Spec.ReadinessGates; len(g) != 2 || g[0].ConditionType != pub.InPlaceUpdateReady || g[1].ConditionType != pub.KruisePodReady {
		t.Errorf("readiness gates %v, want InPlaceUpdateReady and KruisePodReady", g)
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != "u1" {
		t.Errorf("owner references %v", pod.OwnerReferences)
	}
	claims := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims[v.Name] = v.PersistentVolumeClaim.ClaimName
		} else if v.Name != "tmp" {
			t.Errorf("volume %s is not a claim", v.Name)
		}
	}
	if want := map[string]string{"data": "data-web-abcde", "logs": "logs-web-abcde"}; !reflect.DeepEqual(claims, want) {
		t.Errorf("claims %v, want %v", claims, want)
	}
	if r.Template.Labels[appsv1beta1.CloneSetInstanceID] != "" || r.Template.Spec.Volumes[0].EmptyDir == nil || len(r.Template.Spec.ReadinessGates) != 0 {
		t.Error("NewPod changed the template")
	}
	// A readiness gate the template lists is not added twice.
	r.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReady}, {ConditionType: pub.InPlaceUpdateReady}}
	if got := NewPod(r, "abcde", now).Spec.ReadinessGates; len(got) != 2 {
		t.Errorf("readiness gates %v, want the template's two", got)
	}
}

func TestNewClaims(t *testing.T) {
	claims := NewClaims(recipe(), "abcde")
	if len(claims) != 2 {
		t.Fatalf("%d claims, want 2", len(claims))
	}
	data, logs := claims[0], claims[1]
	if data.Name != "data-web-abcde" || logs.Name != "logs-web-abcde" || data.Namespace != "ns" {
		t.Errorf("claims %s/%s and %s", data.Namespace, data.Name, logs.Name)
	}
	if want := map[string]string{"app": "web", appsv1beta1.CloneSetInstanceID: "abcde"}; !reflect.DeepEqual(data.Labels, want) {
		t.Errorf("data labels %v, want %v", data.Labels, want)
	}
	if want := map[string]string{"app": "web", "kind": "logs", appsv1beta1.CloneSetInstanceID: "abcde"}; !reflect.DeepEqual(logs.Labels, want) {
		t.Errorf("logs labels %v, want %v", logs.Labels, want)
	}
	if data.Spec.Resources.Requests.Storage().String() != "1Gi" || len(data.OwnerReferences) != 1 {
		t.Errorf("data claim spec %v owners %v", data.Spec, data.OwnerReferences)
	}
}

func TestInstanceIDs(t *testing.T) {
	withID := func(id string) gen.PodModifier {
		return gen.AddPodLabels(map[string]string{appsv1beta1.CloneSetInstanceID: id})
	}
	pvc := func(id string, age time.Duration) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
			Name: "data-web-" + id, Labels: map[string]string{appsv1beta1.CloneSetInstanceID: id},
			CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-age)),
		}}
	}
	seq := func(ids ...string) func() string {
		return func() string { id := ids[0]; ids = ids[1:]; return id }
	}
	pods := []*corev1.Pod{gen.Pod("web-aaaaa", withID("aaaaa"))}
	pvcs := []*corev1.PersistentVolumeClaim{pvc("aaaaa", 3*time.Hour), pvc("young", time.Hour), pvc("older", 2*time.Hour)}

	if got, want := InstanceIDs(3, pods, pvcs, true, seq("aaaaa", "young", "fresh")), []string{"older", "young", "fresh"}; !reflect.DeepEqual(got, want) {
		t.Errorf("with reuse: %v, want %v (orphan PVCs oldest first, then a new ID no pod or PVC holds)", got, want)
	}
	if got, want := InstanceIDs(2, pods, pvcs, false, seq("older", "aaaaa", "fresh", "other")), []string{"fresh", "other"}; !reflect.DeepEqual(got, want) {
		t.Errorf("without reuse: %v, want %v (never an ID a PVC still holds)", got, want)
	}
	dying := pvc("dying", 4*time.Hour)
	dying.DeletionTimestamp = &metav1.Time{Time: time.Unix(1e9, 0)}
	if got, want := InstanceIDs(2, pods, []*corev1.PersistentVolumeClaim{dying, pvc("young", time.Hour)}, true, seq("dying", "fresh")), []string{"young", "fresh"}; !reflect.DeepEqual(got, want) {
		t.Errorf("with reuse and a PVC being deleted: %v, want %v (a pod naming that PVC would never start)", got, want)
	}
	if got := InstanceIDs(2, nil, nil, true, nil); len(got) != 2 || len(got[0]) != 5 || got[0] == got[1] {
		t.Errorf("random IDs %v, want two distinct of length 5", got)
	}
}

func TestReplacementsWaiting(t *testing.T) {
	now := time.Unix(1e9, 0)
	pod := func(id string, deletedAgo time.Duration) *corev1.Pod {
		p := gen.Pod("web-"+id, gen.AddPodLabels(map[string]string{appsv1beta1.CloneSetInstanceID: id}))
		if deletedAgo >= 0 {
			p.DeletionTimestamp = &metav1.Time{Time: now.Add(-deletedAgo)}
		}
		return p
	}
	const alive = -1
	claim := func(id string, deleting bool) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
			Name: "data-web-" + id, Labels: map[string]string{appsv1beta1.CloneSetInstanceID: id}}}
		if deleting {
			c.DeletionTimestamp = &metav1.Time{Time: now}
		}
		return c
	}
	cases := []struct {
		name    string
		pods    []*corev1.Pod
		claims  []*corev1.PersistentVolumeClaim
		reuse   bool
		waiting int
		recheck time.Duration
	}{
		{name: "a pod deleted by someone else, its PVC kept: its replacement waits for its name and PVC",
			pods: []*corev1.Pod{pod("aaaaa", 10*time.Second), pod("bbbbb", alive)}, claims: []*corev1.PersistentVolumeClaim{claim("aaaaa", false), claim("bbbbb", false)},
			reuse: true, waiting: 1, recheck: 50 * time.Second},
		{name: "the soonest overdue sets the recheck",
			pods: []*corev1.Pod{pod("aaaaa", 10*time.Second), pod("ccccc", 40*time.Second)}, claims: []*corev1.PersistentVolumeClaim{claim("aaaaa", false), claim("ccccc", false)},
			reuse: true, waiting: 2, recheck: 20 * time.Second},
		{name: "a pod deleted a minute past its deletion time is on a dead node: no waiting (OpenKruise #1099)",
			pods: []*corev1.Pod{pod("aaaaa", time.Minute)}, claims: []*corev1.PersistentVolumeClaim{claim("aaaaa", false)}, reuse: true},
		{name: "reuse off: the PVC goes, nothing to wait for",
			pods: []*corev1.Pod{pod("aaaaa", 10*time.Second)}, claims: []*corev1.PersistentVolumeClaim{claim("aaaaa", false)}},
		{name: "a pod the CloneSet deleted took its PVC with it",
			pods: []*corev1.Pod{pod("aaaaa", 10*time.Second)}, claims: []*corev1.PersistentVolumeClaim{claim("aaaaa", true)}, reuse: true},
		{name: "a pod with no PVC", pods: []*corev1.Pod{pod("aaaaa", 10*time.Second)}, reuse: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			waiting, recheck := ReplacementsWaiting(tc.pods, tc.claims, tc.reuse, now)
			if waiting != tc.waiting || recheck != tc.recheck {
				t.Errorf("waiting %d, recheck %s; want %d, %s", waiting, recheck, tc.waiting, tc.recheck)
			}
		})
	}
}
