//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// patchCloneSet applies a JSON patch (or, for a patch starting with "{", a merge patch) to
// CloneSet name.
func patchCloneSet(ctx context.Context, kc versioned.Interface, ns, name, patch string) (*appsv1alpha1.CloneSet, error) {
	pt := types.JSONPatchType
	if strings.HasPrefix(patch, "{") {
		pt = types.MergePatchType
	}
	return kc.AppsV1alpha1().CloneSets(ns).Patch(ctx, name, pt, []byte(patch), metav1.PatchOptions{})
}

func mustPatchCloneSet(ctx context.Context, t *testing.T, kc versioned.Interface, ns, name, patch string) *appsv1alpha1.CloneSet {
	t.Helper()
	cs, err := patchCloneSet(ctx, kc, ns, name, patch)
	if err != nil {
		t.Fatalf("patching CloneSet %s with %s: %v", name, patch, err)
	}
	return cs
}

func imagePatch(image string) string {
	return fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, image)
}

// checkUpdatedInPlace checks that each pod of after is the pod of before with its name (same
// UID, IP), running image at revision, its container restarted once (restart says so) or not.
func checkUpdatedInPlace(t *testing.T, before, after map[string]corev1.Pod, image, revision string, restart bool) {
	t.Helper()
	if len(after) != len(before) {
		t.Errorf("%d pods after the update (%s), want the %d before (%s)", len(after), podNames(after), len(before), podNames(before))
	}
	for name, p := range after {
		old, ok := before[name]
		if !ok || old.UID != p.UID || old.Status.PodIP != p.Status.PodIP {
			t.Errorf("pod %s (UID %s, IP %s) is not the one before: an in-place update keeps the pod", name, p.UID, p.Status.PodIP)
			continue
		}
		if got := p.Spec.Containers[0].Image; got != image || p.Labels["controller-revision-hash"] != revision {
			t.Errorf("pod %s runs %s at revision %s, want %s at %s", name, got, p.Labels["controller-revision-hash"], image, revision)
		}
		want := old.Status.ContainerStatuses[0].RestartCount
		if restart {
			want++
		}
		if got := p.Status.ContainerStatuses[0].RestartCount; got != want {
			t.Errorf("pod %s container restarted %d times, want %d", name, got, want)
		}
	}
}

// ReCreate replaces every pod by a new one (new name and UID) at the new revision; none of the
// old pods is left and the status settles on the update revision.
func TestCloneSetReCreateUpdate(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-recreate")
	variant := f.BusyboxVariant(t)

	createCloneSet(ctx, t, kc, busyboxCloneSet(f, ns, "web", 2, appsv1alpha1.RecreateCloneSetUpdateStrategyType))
	before := waitPodsSettled(ctx, t, f, kc, ns, "web", 2)
	var gone []types.UID
	for _, p := range before {
		gone = append(gone, p.UID)
	}
	oldRevision := mustPatchCloneSet(ctx, t, kc, ns, "web", imagePatch(variant)).Status.UpdateRevision

	after := waitPodsSettled(ctx, t, f, kc, ns, "web", 2, gone...)
	cs, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the CloneSet: %v", err)
	}
	if cs.Status.UpdateRevision == oldRevision || cs.Status.CurrentRevision != cs.Status.UpdateRevision ||
		cs.Status.UpdatedReadyReplicas != 2 || cs.Status.ReadyReplicas != 2 {
		t.Errorf("status %+v: want current = update revision (not %s), 2 updated and ready", cs.Status, oldRevision)
	}
	for name, p := range after {
		if _, ok := before[name]; ok {
			t.Errorf("pod %s has an old pod's name: ReCreate makes new pods", name)
		}
		if p.Spec.Containers[0].Image != variant || p.Labels["controller-revision-hash"] != cs.Status.UpdateRevision {
			t.Errorf("pod %s runs %s at revision %s, want %s at %s", name, p.Spec.Containers[0].Image,
				p.Labels["controller-revision-hash"], variant, cs.Status.UpdateRevision)
		}
		if n := p.Status.ContainerStatuses[0].RestartCount; n != 0 {
			t.Errorf("pod %s container restarted %d times: a new pod starts fresh", name, n)
		}
	}
}

// InPlaceOnly applies an image change in place; a change it cannot apply in place (env, command)
// is refused by the validating webhook, saying which field and why, and the pods stay as they are.
func TestCloneSetInPlaceOnly(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-inplaceonly")
	variant := f.BusyboxVariant(t)

	createCloneSet(ctx, t, kc, busyboxCloneSet(f, ns, "web", 2, appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType))
	before := waitPodsSettled(ctx, t, f, kc, ns, "web", 2)

	mustPatchCloneSet(ctx, t, kc, ns, "web", imagePatch(variant))
	updated := waitCloneSet(ctx, t, kc, ns, "web", 2)
	after := activeClonePods(ctx, t, f, ns, "web")
	checkUpdatedInPlace(t, before, after, variant, updated.Status.UpdateRevision, true)

	for _, c := range []struct{ field, patch string }{
		{"spec.template.spec.containers[main].env",
			`[{"op":"add","path":"/spec/template/spec/containers/0/env","value":[{"name":"MODE","value":"b"}]}]`},
		{"spec.template.spec.containers[main].command",
			`[{"op":"replace","path":"/spec/template/spec/containers/0/command","value":["sh","-c","echo new; ` + sleeper + `"]}]`},
	} {
		_, err := patchCloneSet(ctx, kc, ns, "web", c.patch)
		if !apierrors.IsInvalid(err) {
			t.Errorf("a change of %s under InPlaceOnly: %v, want it refused as invalid", c.field, err)
			continue
		}
		for _, want := range []string{`admission webhook "vcloneset.kb.io" denied the request`, c.field, "cannot be applied to running pods", "InPlaceOnly"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal of a change of %s says %q, want it to say %q", c.field, err, want)
			}
		}
	}
	cs, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the CloneSet: %v", err)
	}
	if cs.Generation != updated.Generation {
		t.Errorf("generation %d after the refusals, want %d: nothing refused is stored", cs.Generation, updated.Generation)
	}
	checkUpdatedInPlace(t, after, activeClonePods(ctx, t, f, ns, "web"), variant, updated.Status.UpdateRevision, false)
}

// cpu and memory requests and limits change in place under InPlaceIfPossible, through the
// pods/resize subresource: the same pods, not restarted (resizePolicy NotRequired, the default),
// with the new values in the spec and, once the kubelet has applied them, in the container
// statuses the runtime reports.
func TestCloneSetResizesInPlace(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-resize")

	resources := func(reqCPU, reqMem, limCPU, limMem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(reqCPU), corev1.ResourceMemory: resource.MustParse(reqMem)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limCPU), corev1.ResourceMemory: resource.MustParse(limMem)},
		}
	}
	f.SkipWithoutResize(t)
	cs := busyboxCloneSet(f, ns, "web", 2, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)
	cs.Spec.Template.Spec.Containers[0].Resources = resources("50m", "32Mi", "100m", "64Mi")
	createCloneSet(ctx, t, kc, cs)
	before := waitPodsSettled(ctx, t, f, kc, ns, "web", 2)

	want := resources("80m", "48Mi", "150m", "96Mi")
	patch := `[{"op":"replace","path":"/spec/template/spec/containers/0/resources","value":` +
		`{"requests":{"cpu":"80m","memory":"48Mi"},"limits":{"cpu":"150m","memory":"96Mi"}}}]`
	mustPatchCloneSet(ctx, t, kc, ns, "web", patch)
	updated := waitCloneSet(ctx, t, kc, ns, "web", 2)
	after := activeClonePods(ctx, t, f, ns, "web")
	checkUpdatedInPlace(t, before, after, f.Image("public/busybox:1.35"), updated.Status.UpdateRevision, false)
	for name, p := range after {
		if got := p.Spec.Containers[0].Resources; !sameResources(got, want) {
			t.Errorf("pod %s spec resources %v, want %v", name, describeResources(got), describeResources(want))
		}
	}
	framework.WaitFor(ctx, t, time.Minute, "the kubelet reporting the new resources of every pod", func(ctx context.Context) (bool, string, error) {
		var seen []string
		ok := true
		for name, p := range activeClonePods(ctx, t, f, ns, "web") {
			st := p.Status.ContainerStatuses
			if len(st) == 0 || st[0].Resources == nil {
				ok = false
				seen = append(seen, name+": no resources reported")
				continue
			}
			seen = append(seen, fmt.Sprintf("%s: %s allocated %v", name, describeResources(*st[0].Resources), st[0].AllocatedResources))
			if !sameResources(*st[0].Resources, want) || !st[0].AllocatedResources.Cpu().Equal(want.Requests[corev1.ResourceCPU]) ||
				!st[0].AllocatedResources.Memory().Equal(want.Requests[corev1.ResourceMemory]) {
				ok = false
			}
		}
		return ok, strings.Join(seen, "; "), nil
	})
}

// On a Kubernetes release without pods/resize (before 1.33) kruise cannot resize a running pod:
// under InPlaceOnly a cpu change is refused with the FailedUpdate condition saying why, and the
// pods stay as they are; under InPlaceIfPossible the pods are recreated with the new resources.
func TestCloneSetResizeWithoutResizeSubresource(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	if f.ServesResize(t) {
		t.Skipf("Kubernetes 1.%d serves pods/resize: TestCloneSetResizesInPlace covers it", f.ServerMinor(t))
	}
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-noresize")

	cs := busyboxCloneSet(f, ns, "web", 2, appsv1alpha1.InPlaceOnlyCloneSetUpdateStrategyType)
	cpu := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
	cs.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: cpu("50m"), Limits: cpu("100m")}
	createCloneSet(ctx, t, kc, cs)
	before := waitPodsSettled(ctx, t, f, kc, ns, "web", 2)

	mustPatchCloneSet(ctx, t, kc, ns, "web", `[{"op":"replace","path":"/spec/template/spec/containers/0/resources",`+
		`"value":{"requests":{"cpu":"80m"},"limits":{"cpu":"150m"}}}]`)
	framework.WaitFor(ctx, t, time.Minute, "the FailedUpdate condition naming pods/resize", func(ctx context.Context) (bool, string, error) {
		cur, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == appsv1alpha1.CloneSetConditionFailedUpdate && strings.Contains(c.Message, "spec.containers[main].resources") &&
				strings.Contains(c.Message, "does not serve pods/resize") {
				return true, c.Message, nil
			}
		}
		return false, fmt.Sprintf("conditions %+v", cur.Status.Conditions), nil
	})
	for name, p := range activeClonePods(ctx, t, f, ns, "web") {
		if old, ok := before[name]; !ok || old.UID != p.UID || !p.Spec.Containers[0].Resources.Limits.Cpu().Equal(resource.MustParse("100m")) {
			t.Errorf("pod %s (UID %s, cpu limit %s) changed under InPlaceOnly, which cannot apply the change", name, p.UID, p.Spec.Containers[0].Resources.Limits.Cpu())
		}
	}

	mustPatchCloneSet(ctx, t, kc, ns, "web", `{"spec":{"updateStrategy":{"type":"InPlaceIfPossible"}}}`)
	var gone []types.UID
	for _, p := range before {
		gone = append(gone, p.UID)
	}
	after := waitPodsSettled(ctx, t, f, kc, ns, "web", 2, gone...)
	for name, p := range after {
		if got := p.Spec.Containers[0].Resources.Limits.Cpu(); !got.Equal(resource.MustParse("150m")) {
			t.Errorf("recreated pod %s has cpu limit %s, want 150m", name, got)
		}
	}
}

func sameResources(a, b corev1.ResourceRequirements) bool {
	same := func(x, y corev1.ResourceList) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !v.Equal(w) {
				return false
			}
		}
		return true
	}
	return same(a.Requests, b.Requests) && same(a.Limits, b.Limits)
}

func describeResources(r corev1.ResourceRequirements) string {
	return fmt.Sprintf("requests cpu %s memory %s, limits cpu %s memory %s",
		r.Requests.Cpu(), r.Requests.Memory(), r.Limits.Cpu(), r.Limits.Memory())
}

// waitPartitioned waits until CloneSet name has replicas pods, all available, exactly updated of
// them at the update revision (by their labels and by status.updatedReplicas), and returns it.
func waitPartitioned(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, ns, name string, replicas, updated int32) *appsv1alpha1.CloneSet {
	t.Helper()
	var cs *appsv1alpha1.CloneSet
	framework.WaitFor(ctx, t, cloneSetTimeout, fmt.Sprintf("%d of %d pods of %s updated", updated, replicas, name), func(ctx context.Context) (bool, string, error) {
		var err error
		if cs, err = kc.AppsV1alpha1().CloneSets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, "", err
		}
		s := cs.Status
		labelled := int32(0)
		pods := clonePods(ctx, t, f, ns, name)
		for _, p := range pods {
			if p.Labels["controller-revision-hash"] == s.UpdateRevision {
				labelled++
			}
		}
		return s.ObservedGeneration == cs.Generation && s.Replicas == replicas && s.AvailableReplicas == replicas &&
				s.UpdatedReplicas == updated && s.UpdatedReadyReplicas == updated && s.ExpectedUpdatedReplicas == updated &&
				int32(len(pods)) == replicas && labelled == updated,
			fmt.Sprintf("%d pods, %d labelled with the update revision; status %+v", len(pods), labelled, s), nil
	})
	return cs
}

// A partition holds pods at the old revision: partition 3 of 4 updates exactly one (and no
// more, for a while), "50%" two, 0 all four.
func TestCloneSetPartition(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-partition")
	variant := f.BusyboxVariant(t)

	cs := busyboxCloneSet(f, ns, "web", 4, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)
	cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(3))
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(4))
	createCloneSet(ctx, t, kc, cs)
	waitPodsSettled(ctx, t, f, kc, ns, "web", 4)

	mustPatchCloneSet(ctx, t, kc, ns, "web", imagePatch(variant))
	canary := waitPartitioned(ctx, t, f, kc, ns, "web", 4, 1)
	framework.Consistently(ctx, t, 5*time.Second, "no second pod updated under partition 3", func(ctx context.Context) (bool, string, error) {
		n := 0
		for _, p := range clonePods(ctx, t, f, ns, "web") {
			if p.Labels["controller-revision-hash"] == canary.Status.UpdateRevision {
				n++
			}
		}
		return n == 1, fmt.Sprintf("%d pods at the update revision", n), nil
	})

	mustPatchCloneSet(ctx, t, kc, ns, "web", `{"spec":{"updateStrategy":{"partition":"50%"}}}`)
	waitPartitioned(ctx, t, f, kc, ns, "web", 4, 2)

	mustPatchCloneSet(ctx, t, kc, ns, "web", `{"spec":{"updateStrategy":{"partition":0}}}`)
	waitPartitioned(ctx, t, f, kc, ns, "web", 4, 4)
	done := waitCloneSet(ctx, t, kc, ns, "web", 4)
	for name, p := range activeClonePods(ctx, t, f, ns, "web") {
		if p.Spec.Containers[0].Image != variant {
			t.Errorf("pod %s runs %s after partition 0, want %s", name, p.Spec.Containers[0].Image, variant)
		}
	}
	if done.Status.CurrentRevision != canary.Status.UpdateRevision {
		t.Errorf("current revision %s, want the update revision %s once all pods have it", done.Status.CurrentRevision, canary.Status.UpdateRevision)
	}
}
