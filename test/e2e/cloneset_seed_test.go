//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// seedPause is the loopback registry's image that the seeds' nginx (and placeholder images) run
// as: the registry has no nginx, and busybox's default command (sh) would exit at once; pause
// blocks until SIGTERM, as a server does.
const seedPause = "public/pause:3.10"

// seedApply creates the workload of testdata/seeds/file in ns as written, through the dynamic
// client (so no field is dropped on the way), after pointing each container image named in
// images at the reference given there, and after mods (what the test must point at its own
// objects). Every image of the seed must be in images.
func seedApply(ctx context.Context, t *testing.T, f *framework.Framework, ns, file string, images map[string]string,
	mods ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "seeds", file))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
		t.Fatalf("reading seed %s: %v", file, err)
	}
	containers, _, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if err != nil {
		t.Fatalf("seed %s: %v", file, err)
	}
	for _, c := range containers {
		c := c.(map[string]any)
		img, ok := images[c["image"].(string)]
		if !ok {
			t.Fatalf("seed %s: no loopback image for %v", file, c["image"])
		}
		c["image"] = img
	}
	if err := unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		m(obj)
	}
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		t.Fatal(err)
	}
	resource := strings.ToLower(obj.GetKind()) + "s"
	created, err := f.Dynamic(t).Resource(gv.WithResource(resource)).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the %s of seed %s: %v", obj.GetKind(), file, err)
	}
	return created
}

// seedWaitPods waits until the seed's CloneSet (label app=sample) has n pods, all Ready and in
// lifecycle state state, and returns them.
func seedWaitPods(ctx context.Context, t *testing.T, f *framework.Framework, ns string, n int, state pub.LifecycleStateType) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	framework.WaitFor(ctx, t, cloneSetTimeout, fmt.Sprintf("%d pods Ready in %s", n, state), func(ctx context.Context) (bool, string, error) {
		pods = clonePods(ctx, t, f, ns, "sample")
		ok := len(pods) == n
		var seen []string
		for i := range pods {
			seen = append(seen, fmt.Sprintf("%s=%s/ready=%t", pods[i].Name, lifecycleState(&pods[i]), framework.PodReady(&pods[i])))
			ok = ok && framework.PodReady(&pods[i]) && lifecycleState(&pods[i]) == state
		}
		return ok, strings.Join(seen, " "), nil
	})
	return pods
}

// The sample CloneSet of OpenKruise's CloneSet page, in both API versions the page shows: five
// pods, each named <cloneset>-<instance id> and labelled with that id, and the status the page
// shows (observedGeneration 1, replicas, ready and updated 5, one revision sample-<hash>).
func TestCloneSetSeedDocsSample(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"openkruise-docs-cloneset-v1alpha1.yaml", "openkruise-docs-cloneset-v1beta1.yaml"} {
		t.Run(strings.TrimSuffix(file, ".yaml"), func(t *testing.T) {
			t.Parallel()
			f := framework.New(t)
			kc := f.KruiseClient(t)
			ctx := framework.Context(t, 5*time.Minute)
			ns := f.NewNamespace(ctx, t, "seed-docs")
			seedApply(ctx, t, f, ns, file, map[string]string{"nginx:alpine": f.Image(seedPause)})

			cs := waitCloneSet(ctx, t, kc, ns, "sample", 5)
			s := cs.Status
			if cs.Generation != 1 || s.ObservedGeneration != 1 || s.ReadyReplicas != 5 || s.UpdatedReadyReplicas != 5 ||
				!strings.HasPrefix(s.UpdateRevision, "sample-") {
				t.Errorf("status %+v (generation %d), want the page's: observedGeneration 1, ready, updatedReady 5, revision sample-<hash>", s, cs.Generation)
			}
			for _, p := range clonePods(ctx, t, f, ns, "sample") {
				id := p.Labels[appsv1beta1.CloneSetInstanceID]
				if id == "" || p.Name != "sample-"+id || p.Labels["controller-revision-hash"] != s.UpdateRevision {
					t.Errorf("pod %s: instance id %q, revision %q; want named sample-<id>, at %s", p.Name, id, p.Labels["controller-revision-hash"], s.UpdateRevision)
				}
			}
		})
	}
}

// OpenKruise v1.4's preNormal seed: the five pods run and are Ready but stay PreparingNormal, and
// the CloneSet counts none available, until the hook's finalizer is on each; then they are
// Normal and available.
func TestCloneSetSeedPreNormal(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "seed-prenormal")
	const blocker = "example.io/unready-blocker"
	seedApply(ctx, t, f, ns, "openkruise-1.4-prenormal.yaml", map[string]string{"nginx:alpine": f.Image(seedPause)})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, p := range clonePods(ctx, t, f, ns, "sample") {
			_, _ = f.Client.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})

	pods := seedWaitPods(ctx, t, f, ns, 5, pub.LifecycleStatePreparingNormal)
	framework.WaitFor(ctx, t, cloneSetTimeout, "the CloneSet counting 5 ready pods", func(ctx context.Context) (bool, string, error) {
		cs, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "sample", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return cs.Status.ReadyReplicas == 5, fmt.Sprintf("status %+v", cs.Status), nil
	})
	framework.Consistently(ctx, t, 3*time.Second, "no pod available while the hook is off", func(ctx context.Context) (bool, string, error) {
		cs, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "sample", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		pods := clonePods(ctx, t, f, ns, "sample")
		held := 0
		for i := range pods {
			if lifecycleState(&pods[i]) == pub.LifecycleStatePreparingNormal {
				held++
			}
		}
		return cs.Status.AvailableReplicas == 0 && held == 5, fmt.Sprintf("%d pods PreparingNormal; status %+v", held, cs.Status), nil
	})
	for _, p := range pods {
		patch := fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, blocker)
		if _, err := f.Client.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("putting the hook on pod %s: %v", p.Name, err)
		}
	}
	seedWaitPods(ctx, t, f, ns, 5, pub.LifecycleStateNormal)
	waitCloneSet(ctx, t, kc, ns, "sample", 5)
}

// OpenKruise v1.1's container-priority seed, updated as the post does (the annotation the
// sidecar reads as env, and main's image, in one update): the sidecar (priority 10) is restarted
// first with the new env, main only then with its new image, and the state annotation passes
// through the two states the post shows. A pod watch records every version of the pod, so the
// state between the batches is seen even though the sidecar is Ready at once.
func TestCloneSetSeedInPlacePriority(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "seed-priority")
	mainV2 := f.Variant(t, seedPause, 256)
	created := seedApply(ctx, t, f, ns, "openkruise-1.1-inplace-priority.yaml", map[string]string{
		"sidecar-image:v1": f.Image(seedPause), "main-image:v1": f.Image(seedPause),
	})
	gvr := schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}
	waitCloneSet(ctx, t, kc, ns, "sample", 1)
	before := clonePods(ctx, t, f, ns, "sample")[0]
	sidecarBefore, mainBefore := *framework.ContainerStatusOf(&before, "sidecar"), *framework.ContainerStatusOf(&before, "main")
	rec := recordClonePods(ctx, t, f, ns, "sample")

	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/metadata/annotations/app-config","value":"... config v2 ..."},`+
		`{"op":"replace","path":"/spec/template/spec/containers/1/image","value":%q}]`, mainV2)
	if _, err := f.Dynamic(t).Resource(gvr).Namespace(ns).Patch(ctx, created.GetName(), types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("updating the CloneSet: %v", err)
	}
	cs := waitCloneSet(ctx, t, kc, ns, "sample", 1)
	after := clonePods(ctx, t, f, ns, "sample")[0]
	if after.UID != before.UID || after.Annotations["app-config"] != "... config v2 ..." || after.Spec.Containers[1].Image != mainV2 {
		t.Fatalf("pod %s (uid %s): app-config %q, main image %s; want the same pod (uid %s) updated in place",
			after.Name, after.UID, after.Annotations["app-config"], after.Spec.Containers[1].Image, before.UID)
	}

	// "At this moment": the sidecar's batch applied, main's image still to come. Besides the keys
	// the post shows, the state has lastContainerStatuses with the sidecar's old container (kruise
	// tells a container restarted for env by its new container ID; OpenKruise reads the daemon's
	// hashes instead, and reading this entry checks only that the sidecar runs the image its spec
	// names, which it does).
	var mid *pub.InPlaceUpdateState
	for _, p := range rec.versions(before.UID) {
		if _, ok := p.Annotations[pub.InPlaceUpdateStateKey]; !ok {
			continue
		}
		if s, doc := inPlaceStateOf(t, &p); len(s.ContainerBatchesRecord) == 1 {
			mid = s
			t.Logf("state between the batches: %s", p.Annotations[pub.InPlaceUpdateStateKey])
			checkStateKeys(t, p.Name, doc, "revision", "updateTimestamp", "nextContainerImages", "preCheckBeforeNext",
				"containerBatchesRecord", "lastContainerStatuses")
			break
		}
	}
	if mid == nil {
		t.Fatalf("no version of pod %s had one batch recorded", before.Name)
	}
	if mid.Revision != cs.Status.UpdateRevision || mid.UpdateTimestamp.IsZero() {
		t.Errorf("state revision %q updateTimestamp %s, want %q and a time", mid.Revision, mid.UpdateTimestamp, cs.Status.UpdateRevision)
	}
	if fmt.Sprint(mid.NextContainerImages) != fmt.Sprint(map[string]string{"main": mainV2}) || len(mid.NextContainerRefMetadata) != 0 {
		t.Errorf("state nextContainerImages %v nextContainerRefMetadata %v, want {main: %s} and none", mid.NextContainerImages, mid.NextContainerRefMetadata, mainV2)
	}
	if pc := mid.PreCheckBeforeNext; pc == nil || fmt.Sprint(pc.ContainersRequiredReady) != "[sidecar]" {
		t.Errorf("state preCheckBeforeNext %+v, want containersRequiredReady [sidecar]", pc)
	}
	if got := batchNames(mid); fmt.Sprint(got) != "[[sidecar]]" {
		t.Errorf("state containerBatchesRecord %v, want [[sidecar]]", got)
	}
	if _, ok := mid.LastContainerStatuses["main"]; ok || len(mid.LastContainerStatuses) != 1 {
		t.Errorf("state lastContainerStatuses %v, want only the sidecar's", mid.LastContainerStatuses)
	}

	// "Finally": both batches recorded, main's old image ID kept, nothing left to do.
	final, doc := inPlaceStateOf(t, &after)
	t.Logf("final state: %s", after.Annotations[pub.InPlaceUpdateStateKey])
	checkStateKeys(t, after.Name, doc, "revision", "updateTimestamp", "lastContainerStatuses", "containerBatchesRecord")
	if got := batchNames(final); fmt.Sprint(got) != "[[sidecar] [main]]" {
		t.Errorf("final containerBatchesRecord %v, want [[sidecar] [main]]", got)
	}
	if final.Revision != mid.Revision || !final.UpdateTimestamp.Equal(&mid.UpdateTimestamp) {
		t.Errorf("final revision %q at %s, want %q at %s", final.Revision, final.UpdateTimestamp, mid.Revision, mid.UpdateTimestamp)
	}
	if last := final.LastContainerStatuses["main"]; last.ImageID == "" || last.ImageID != mainBefore.ImageID {
		t.Errorf("final lastContainerStatuses[main] %+v, want the old main's imageID %s", last, mainBefore.ImageID)
	}

	// The containers: each restarted once, the sidecar first, with the new env.
	sidecar, main := framework.ContainerStatusOf(&after, "sidecar"), framework.ContainerStatusOf(&after, "main")
	if sidecar.RestartCount != sidecarBefore.RestartCount+1 || main.RestartCount != mainBefore.RestartCount+1 {
		t.Errorf("restarts: sidecar %d (was %d), main %d (was %d); want each restarted once", sidecar.RestartCount, sidecarBefore.RestartCount, main.RestartCount, mainBefore.RestartCount)
	}
	if main.State.Running == nil || sidecar.State.Running == nil || main.State.Running.StartedAt.Before(&sidecar.State.Running.StartedAt) {
		t.Errorf("main (%s) started before the sidecar (%s)", framework.DescribeContainerStatus(main), framework.DescribeContainerStatus(sidecar))
	}
	info, err := framework.CRI(ctx, t).ContainerInfo(ctx, cri.RawContainerID(sidecar.ContainerID))
	if err != nil {
		t.Fatal(err)
	}
	env, err := info.CreatedEnv()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := env.Lookup("APP_CONFIG"); v != "... config v2 ..." {
		t.Errorf("the restarted sidecar was started with APP_CONFIG=%q, want the new annotation", v)
	}
}
