//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// sleeper is the command of the test CloneSets' containers: it sleeps and exits at once on SIGTERM.
const sleeper = "trap 'exit 0' TERM; while true; do sleep 1; done"

// busyboxCloneSet is a v1alpha1 CloneSet of replicas busybox pods labelled app=name, with the
// given update strategy type.
func busyboxCloneSet(f *framework.Framework, ns, name string, replicas int32, update appsv1alpha1.CloneSetUpdateStrategyType) *appsv1alpha1.CloneSet {
	return &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name: "main", Image: f.Image("public/busybox:1.35"), Command: []string{"sh", "-c", sleeper},
					}},
				},
			},
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: update},
		},
	}
}

func createCloneSet(ctx context.Context, t *testing.T, kc versioned.Interface, cs *appsv1alpha1.CloneSet) {
	t.Helper()
	if _, err := kc.AppsV1alpha1().CloneSets(cs.Namespace).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CloneSet %s: %v", cs.Name, err)
	}
}

// activeClonePods are the pods of CloneSet name not being deleted, by name.
func activeClonePods(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string) map[string]corev1.Pod {
	t.Helper()
	out := map[string]corev1.Pod{}
	for _, p := range clonePods(ctx, t, f, ns, name) {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p
		}
	}
	return out
}

// waitPodsSettled waits until CloneSet name has want pods, all up to date and available, none of
// them being deleted and none with a UID in gone; it returns them by name.
func waitPodsSettled(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, ns, name string, want int, gone ...types.UID) map[string]corev1.Pod {
	t.Helper()
	waitCloneSet(ctx, t, kc, ns, name, int32(want))
	var pods map[string]corev1.Pod
	framework.WaitFor(ctx, t, cloneSetTimeout, fmt.Sprintf("%d pods of %s, none of %v", want, name, gone), func(ctx context.Context) (bool, string, error) {
		all := clonePods(ctx, t, f, ns, name)
		pods = map[string]corev1.Pod{}
		for _, p := range all {
			for _, g := range gone {
				if p.UID == g {
					return false, fmt.Sprintf("pod %s (%s) still there", p.Name, g), nil
				}
			}
			pods[p.Name] = p
		}
		return len(all) == want, fmt.Sprintf("%d pods: %s", len(all), podNames(pods)), nil
	})
	return pods
}

func podNames(pods map[string]corev1.Pod) string {
	var names []string
	for n := range pods {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// dataCloneSet is a CloneSet whose pods each get a PVC from template "data" of the default
// storage class, mounted at /data; each container appends its pod's UID to /data/owners and prints the
// file, so a pod's log tells which pods had its volume before it.
func dataCloneSet(f *framework.Framework, ns, name string, replicas int32) *appsv1alpha1.CloneSet {
	cs := busyboxCloneSet(f, ns, name, replicas, appsv1alpha1.RecreateCloneSetUpdateStrategyType)
	c := &cs.Spec.Template.Spec.Containers[0]
	c.Command = []string{"sh", "-c", `echo "$POD_UID" >> /data/owners; echo "owners: $(cat /data/owners | tr '\n' ' ')"; ` + sleeper}
	c.Env = []corev1.EnvVar{{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Mi")}},
		},
	}}
	return cs
}

// checkPodClaim checks that pod has its instance ID label, is named <cloneset>-<id> and mounts
// the bound PVC data-<cloneset>-<id>, which carries the same label; it returns that PVC.
func checkPodClaim(ctx context.Context, t *testing.T, f *framework.Framework, cs string, pod *corev1.Pod) *corev1.PersistentVolumeClaim {
	t.Helper()
	id := pod.Labels[appsv1alpha1.CloneSetInstanceID]
	if id == "" || pod.Name != cs+"-"+id {
		t.Fatalf("pod %s has instance ID %q: want a pod named %s-<id>", pod.Name, id, cs)
	}
	want := fmt.Sprintf("data-%s-%s", cs, id)
	mounted := ""
	for _, v := range pod.Spec.Volumes {
		if v.Name == "data" && v.PersistentVolumeClaim != nil {
			mounted = v.PersistentVolumeClaim.ClaimName
		}
	}
	if mounted != want {
		t.Errorf("pod %s mounts PVC %q as volume data, want %s", pod.Name, mounted, want)
	}
	pvc, err := f.Client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, want, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading PVC %s of pod %s: %v", want, pod.Name, err)
	}
	if got := pvc.Labels[appsv1alpha1.CloneSetInstanceID]; got != id {
		t.Errorf("PVC %s has instance ID label %q, want %q", pvc.Name, got, id)
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		t.Errorf("PVC %s is %s, want Bound (the pod runs with it)", pvc.Name, pvc.Status.Phase)
	}
	return pvc
}

// waitOwnersLogged waits until pod's container has printed the UIDs of the pods that had its
// volume, and returns them (the last one is the pod's own).
func waitOwnersLogged(ctx context.Context, t *testing.T, f *framework.Framework, pod *corev1.Pod) []string {
	t.Helper()
	var owners []string
	framework.WaitFor(ctx, t, time.Minute, "pod "+pod.Name+" printing its volume's owners", func(ctx context.Context) (bool, string, error) {
		logs, err := f.PodLogs(ctx, pod.Namespace, pod.Name, "main")
		if err != nil {
			return false, err.Error(), nil
		}
		_, line, ok := strings.Cut(logs, "owners: ")
		line, _, _ = strings.Cut(line, "\n")
		owners = strings.Fields(line)
		return ok, logs, nil
	})
	if len(owners) == 0 || owners[len(owners)-1] != string(pod.UID) {
		t.Fatalf("pod %s printed owners %v, want its own UID %s last", pod.Name, owners, pod.UID)
	}
	return owners
}

// A pod deleted by someone else leaves its PVC: the CloneSet's replacement takes its instance ID,
// so its name and its PVC (the same object, the same data), by default (v1alpha1's
// disablePVCReuse false).
func TestCloneSetPVCReusedByReplacement(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-pvc")

	createCloneSet(ctx, t, kc, dataCloneSet(f, ns, "db", 2))
	before := waitPodsSettled(ctx, t, f, kc, ns, "db", 2)
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for _, p := range before {
		claims[p.Name] = checkPodClaim(ctx, t, f, "db", &p)
	}
	var victim corev1.Pod
	for _, p := range before {
		victim = p
		break
	}
	waitOwnersLogged(ctx, t, f, &victim)

	if err := f.Client.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod %s: %v", victim.Name, err)
	}
	after := waitPodsSettled(ctx, t, f, kc, ns, "db", 2, victim.UID)
	for name, p := range after {
		old, ok := before[name]
		if !ok {
			t.Errorf("pod %s (instance ID %s) is new: the replacement of %s should have taken its instance ID %s",
				name, p.Labels[appsv1alpha1.CloneSetInstanceID], victim.Name, victim.Labels[appsv1alpha1.CloneSetInstanceID])
			continue
		}
		pvc := checkPodClaim(ctx, t, f, "db", &p)
		if pvc.UID != claims[name].UID {
			t.Errorf("pod %s mounts PVC %s with UID %s, want the one before, %s", name, pvc.Name, pvc.UID, claims[name].UID)
		}
		if name != victim.Name {
			if p.UID != old.UID {
				t.Errorf("pod %s was replaced too (UID %s, was %s)", name, p.UID, old.UID)
			}
			continue
		}
		owners := waitOwnersLogged(ctx, t, f, &p)
		if len(owners) != 2 || owners[0] != string(victim.UID) {
			t.Errorf("the replacement %s found owners %v in its volume, want the deleted pod %s then itself", name, owners, victim.UID)
		}
	}
}

// With disablePVCReuse, the PVC of a pod deleted by someone else is deleted, and the replacement
// gets a new instance ID and a new, empty PVC.
func TestCloneSetPVCNotReusedWhenDisabled(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-nopvc")

	cs := dataCloneSet(f, ns, "db", 1)
	cs.Spec.ScaleStrategy.DisablePVCReuse = true
	createCloneSet(ctx, t, kc, cs)
	before := waitPodsSettled(ctx, t, f, kc, ns, "db", 1)
	var victim corev1.Pod
	for _, p := range before {
		victim = p
	}
	oldClaim := checkPodClaim(ctx, t, f, "db", &victim)

	if err := f.Client.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting pod %s: %v", victim.Name, err)
	}
	framework.WaitFor(ctx, t, cloneSetTimeout, "PVC "+oldClaim.Name+" deleted", func(ctx context.Context) (bool, string, error) {
		pvc, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, oldClaim.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "gone", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, fmt.Sprintf("uid %s, deletionTimestamp %v, finalizers %v", pvc.UID, pvc.DeletionTimestamp, pvc.Finalizers), nil
	})
	after := waitPodsSettled(ctx, t, f, kc, ns, "db", 1, victim.UID)
	for _, p := range after {
		if p.Labels[appsv1alpha1.CloneSetInstanceID] == victim.Labels[appsv1alpha1.CloneSetInstanceID] {
			t.Errorf("the replacement %s took the deleted pod's instance ID with PVC reuse off", p.Name)
		}
		pvc := checkPodClaim(ctx, t, f, "db", &p)
		if pvc.UID == oldClaim.UID {
			t.Errorf("the replacement %s mounts the deleted pod's PVC %s", p.Name, pvc.Name)
		}
		if owners := waitOwnersLogged(ctx, t, f, &p); len(owners) != 1 {
			t.Errorf("the replacement %s found owners %v in its volume, want only itself: a new PVC is empty", p.Name, owners)
		}
	}
	list, err := f.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing PVCs: %v", err)
	}
	if len(list.Items) != 1 {
		t.Errorf("%d PVCs, want 1 (the replacement's)", len(list.Items))
	}
}

// scaleStrategy.podsToDelete, then the label apps.kruise.io/specified-delete, each remove exactly
// the pod chosen; the CloneSet replaces it and leaves the others alone.
func TestCloneSetDeletesChosenPods(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-chosen")

	createCloneSet(ctx, t, kc, busyboxCloneSet(f, ns, "web", 3, appsv1alpha1.RecreateCloneSetUpdateStrategyType))
	pods := waitPodsSettled(ctx, t, f, kc, ns, "web", 3)

	checkOnlyReplaced := func(before, after map[string]corev1.Pod, chosen corev1.Pod) {
		t.Helper()
		for name, p := range before {
			if name == chosen.Name {
				continue
			}
			if a, ok := after[name]; !ok || a.UID != p.UID {
				t.Errorf("pod %s was deleted too: only %s was chosen (pods now: %s)", name, chosen.Name, podNames(after))
			}
		}
		if _, ok := after[chosen.Name]; ok {
			t.Errorf("pod %s is back under its own name: its replacement should have a new instance ID", chosen.Name)
		}
	}

	var first corev1.Pod
	for _, p := range pods {
		first = p
		break
	}
	patch := fmt.Sprintf(`{"spec":{"scaleStrategy":{"podsToDelete":[%q]}}}`, first.Name)
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Patch(ctx, "web", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("setting podsToDelete: %v", err)
	}
	afterFirst := waitPodsSettled(ctx, t, f, kc, ns, "web", 3, first.UID)
	checkOnlyReplaced(pods, afterFirst, first)

	var second corev1.Pod
	for _, p := range afterFirst {
		if _, survivor := pods[p.Name]; survivor {
			second = p
			break
		}
	}
	label := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, appsv1alpha1.SpecifiedDeleteKey)
	if _, err := f.Client.CoreV1().Pods(ns).Patch(ctx, second.Name, types.MergePatchType, []byte(label), metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling pod %s: %v", second.Name, err)
	}
	afterSecond := waitPodsSettled(ctx, t, f, kc, ns, "web", 3, second.UID)
	checkOnlyReplaced(afterFirst, afterSecond, second)
}

// kubectl scale, then an HPA whose minReplicas is above the replicas (the HPA controller scales
// up to it without metrics), reach the CloneSet through its scale subresource, whose selector
// comes from status.labelSelector.
func TestCloneSetScaleByKubectlAndHPA(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-hpa")
	kubectl := framework.Kubectl(ctx, t)

	createCloneSet(ctx, t, kc, busyboxCloneSet(f, ns, "web", 1, appsv1alpha1.RecreateCloneSetUpdateStrategyType))
	cs := waitCloneSet(ctx, t, kc, ns, "web", 1)
	sel, err := labels.Parse(cs.Status.LabelSelector)
	if err != nil || cs.Status.LabelSelector == "" || !sel.Matches(labels.Set{"app": "web"}) || sel.Matches(labels.Set{"app": "other"}) {
		t.Errorf("status.labelSelector %q (%v), want the selector app=web", cs.Status.LabelSelector, err)
	}

	kubectl("--namespace", ns, "scale", "clonesets.apps.kruise.io/web", "--replicas=3")
	waitPodsSettled(ctx, t, f, kc, ns, "web", 3)

	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "web"},
			MinReplicas:    ptr.To[int32](4),
			MaxReplicas:    5,
		},
	}
	if _, err := f.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the HPA: %v", err)
	}
	// The HPA controller looks every 15 s.
	waitPodsSettled(ctx, t, f, kc, ns, "web", 4)
	framework.WaitFor(ctx, t, time.Minute, "the HPA's SuccessfulRescale event", func(ctx context.Context) (bool, string, error) {
		events, err := f.ObjectEvents(ctx, ns, "HorizontalPodAutoscaler", "web")
		if err != nil {
			return false, "", err
		}
		ok, seen := framework.HasEvent(events, "SuccessfulRescale", "New size: 4")
		return ok, seen, nil
	})
}
