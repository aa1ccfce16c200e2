//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	lp "github.com/nodekruise/kruise/pkg/contract/launchbarrier"
	"github.com/nodekruise/kruise/pkg/daemon/cri"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// prioReadyFile is the file whose presence makes the high-priority container Ready. It lives in
// the container's own filesystem, so every new instance of the container starts without it and
// stays unready until the test creates it: the test decides when the first batch is done.
const prioReadyFile = "/tmp/ready"

// prioContainer is a busybox container at launch priority p; gated ones are Ready only once
// prioReadyFile exists.
func prioContainer(f *framework.Framework, name, p string, gated bool) corev1.Container {
	c := corev1.Container{
		Name: name, Image: f.Image("public/busybox:1.35"),
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
		Env:     []corev1.EnvVar{{Name: lp.EnvPriority, Value: p}},
	}
	if gated {
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", prioReadyFile}}},
			PeriodSeconds: 1,
		}
	}
	return c
}

// prioMakeReady creates prioReadyFile in the running instance of container (through the node's
// runtime, as `kubectl exec` would, without a client of the exec subresource) and returns when it
// did so.
func prioMakeReady(ctx context.Context, t *testing.T, pod *corev1.Pod, container string) time.Time {
	t.Helper()
	st := framework.ContainerStatusOf(pod, container)
	if st == nil || st.ContainerID == "" || st.State.Running == nil {
		t.Fatalf("container %s of pod %s is not running: %s", container, pod.Name, framework.DescribeContainerStatus(st))
	}
	res, err := framework.CRI(ctx, t).ExecSync(ctx, cri.RawContainerID(st.ContainerID), []string{"touch", prioReadyFile}, 10*time.Second)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("creating %s in container %s of pod %s: %v (exit %d, %s)", prioReadyFile, container, pod.Name, err, res.ExitCode, res.Stderr)
	}
	return time.Now()
}

// inPlaceStateOf decodes the pod's apps.kruise.io/inplace-update-state twice: into the shared
// wire type, and as plain JSON, whose key names the checks compare with OpenKruise's.
func inPlaceStateOf(t *testing.T, pod *corev1.Pod) (*pub.InPlaceUpdateState, map[string]any) {
	t.Helper()
	raw, ok := pod.Annotations[pub.InPlaceUpdateStateKey]
	if !ok {
		t.Fatalf("pod %s has no annotation %s", pod.Name, pub.InPlaceUpdateStateKey)
	}
	var state pub.InPlaceUpdateState
	var doc map[string]any
	if err := json.Unmarshal([]byte(raw), &state); err != nil {
		t.Fatalf("pod %s: annotation %s=%s: %v", pod.Name, pub.InPlaceUpdateStateKey, raw, err)
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatalf("pod %s: annotation %s=%s: %v", pod.Name, pub.InPlaceUpdateStateKey, raw, err)
	}
	return &state, doc
}

// checkStateKeys fails the test unless the state's JSON has exactly the wanted top-level keys
// among those OpenKruise's v1.1 post shows (the others, such as updateImages, are not compared).
func checkStateKeys(t *testing.T, pod string, doc map[string]any, want ...string) {
	t.Helper()
	for _, k := range []string{"revision", "updateTimestamp", "lastContainerStatuses", "nextContainerImages",
		"nextContainerRefMetadata", "preCheckBeforeNext", "containerBatchesRecord"} {
		_, has := doc[k]
		if has != slices.Contains(want, k) {
			t.Errorf("pod %s: in-place update state has key %q: %t, want %t (state %v)", pod, k, has, !has, doc)
		}
	}
}

// batchNames lists the containers of each batch recorded.
func batchNames(state *pub.InPlaceUpdateState) [][]string {
	var out [][]string
	for _, b := range state.ContainerBatchesRecord {
		out = append(out, b.Containers)
	}
	return out
}

// waitClonePod waits until the CloneSet's only pod satisfies cond and returns it.
func waitClonePod(ctx context.Context, t *testing.T, f *framework.Framework, ns, name, desc string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	framework.WaitFor(ctx, t, cloneSetTimeout, desc, func(ctx context.Context) (bool, string, error) {
		pods := clonePods(ctx, t, f, ns, name)
		if len(pods) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods)), nil
		}
		got = &pods[0]
		return cond(got), fmt.Sprintf("%s; state %s", f.DescribePods(ctx, ns, "app="+name), got.Annotations[pub.InPlaceUpdateStateKey]), nil
	})
	return got
}

// Two containers at launch priorities 10 and 0, both given a new image in one update: the
// high-priority container is updated first (batch 1), the other only once the first runs its new
// image and is Ready (batch 2). The test holds batch 1 unready (a readiness probe on a file only
// it creates), sees the update wait there, reads the state annotation field by field against the
// shape of OpenKruise v1.1's post (https://openkruise.io/blog/openkruise-1.1), releases it, and
// reads the final state.
func TestCloneSetInPlaceUpdateByContainerPriority(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 8*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-prio")
	const name = "prio"
	highImage, lowImage := f.BusyboxVariant(t), f.BusyboxVariant(t)

	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					// Declared low first: the order of the batches is the priorities', not the spec's.
					Containers: []corev1.Container{prioContainer(f, "low", "0", false), prioContainer(f, "high", "10", true)},
				},
			},
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
		},
	}
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CloneSet: %v", err)
	}
	// At creation too, "low" waits for "high" to be Ready (launch priority).
	pod := waitClonePod(ctx, t, f, ns, name, "container high running", func(p *corev1.Pod) bool {
		st := framework.ContainerStatusOf(p, "high")
		return st != nil && st.State.Running != nil
	})
	prioMakeReady(ctx, t, pod, "high")
	created := waitCloneSet(ctx, t, kc, ns, name, 1)
	before := clonePods(ctx, t, f, ns, name)[0]
	highBefore, lowBefore := *framework.ContainerStatusOf(&before, "high"), *framework.ContainerStatusOf(&before, "low")

	// Both images in one update.
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q},`+
		`{"op":"replace","path":"/spec/template/spec/containers/1/image","value":%q}]`, lowImage, highImage)
	startedAt := time.Now()
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the images: %v", err)
	}

	// Batch 1: "high" runs its new image as a new container, unready; "low" untouched.
	mid := waitClonePod(ctx, t, f, ns, name, "batch 1 applied: container high restarted with its new image", func(p *corev1.Pod) bool {
		st := framework.ContainerStatusOf(p, "high")
		return framework.ContainerSpecOf(p, "high").Image == highImage && st != nil && st.State.Running != nil &&
			st.ContainerID != highBefore.ContainerID
	})
	if mid.UID != before.UID {
		t.Fatalf("pod %s was recreated (uid %s, was %s): the update is in place", mid.Name, mid.UID, before.UID)
	}
	framework.Consistently(ctx, t, 3*time.Second, "container low not updated while high is unready", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, mid.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		low := framework.ContainerStatusOf(p, "low")
		// The spec's image against the spec's: a status reports whichever tag the runtime
		// knows the image by, which need not be the one the spec names.
		untouched := framework.ContainerSpecOf(p, "low").Image == framework.ContainerSpecOf(&before, "low").Image &&
			low != nil && low.ContainerID == lowBefore.ContainerID
		return untouched, "low: " + framework.DescribeContainerStatus(low) + " spec image " + framework.ContainerSpecOf(p, "low").Image, nil
	})
	mid, err := f.Client.CoreV1().Pods(ns).Get(ctx, mid.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := framework.PodConditionOf(mid, pub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("pod %s: condition %s = %+v during the update, want False", mid.Name, pub.InPlaceUpdateReady, c)
	}
	updating, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	revision := updating.Status.UpdateRevision
	if revision == created.Status.UpdateRevision || mid.Labels["controller-revision-hash"] != revision {
		t.Errorf("pod %s at revision label %s; CloneSet update revision %s (was %s)", mid.Name, mid.Labels["controller-revision-hash"], revision, created.Status.UpdateRevision)
	}

	state, doc := inPlaceStateOf(t, mid)
	t.Logf("state between the batches: %s", mid.Annotations[pub.InPlaceUpdateStateKey])
	checkStateKeys(t, mid.Name, doc, "revision", "updateTimestamp", "lastContainerStatuses", "nextContainerImages",
		"preCheckBeforeNext", "containerBatchesRecord")
	if state.Revision != revision {
		t.Errorf("state revision %q, want %q", state.Revision, revision)
	}
	ts := state.UpdateTimestamp.Time
	if ts.Before(startedAt.Truncate(time.Second)) || ts.After(time.Now()) {
		t.Errorf("state updateTimestamp %s, want between the patch (%s) and now", ts.Format(time.RFC3339), startedAt.Format(time.RFC3339))
	}
	if want := map[string]string{"low": lowImage}; fmt.Sprint(state.NextContainerImages) != fmt.Sprint(want) {
		t.Errorf("state nextContainerImages %v, want %v", state.NextContainerImages, want)
	}
	if pc := state.PreCheckBeforeNext; pc == nil || !slices.Equal(pc.ContainersRequiredReady, []string{"high"}) {
		t.Errorf("state preCheckBeforeNext %+v, want containersRequiredReady [high]", pc)
	}
	if got := batchNames(state); fmt.Sprint(got) != "[[high]]" {
		t.Errorf("state containerBatchesRecord %v, want [[high]]", got)
	} else if bt := state.ContainerBatchesRecord[0].Timestamp.Time; bt.Before(ts) {
		t.Errorf("batch 1 at %s, before the update started (%s)", bt, ts)
	}
	wantLast := map[string]pub.InPlaceUpdateContainerStatus{"high": {ImageID: highBefore.ImageID, ContainerID: highBefore.ContainerID}}
	if fmt.Sprint(state.LastContainerStatuses) != fmt.Sprint(wantLast) || highBefore.ImageID == "" {
		t.Errorf("state lastContainerStatuses %+v, want %+v (the old container's imageID and ID)", state.LastContainerStatuses, wantLast)
	}

	// Release batch 1: "low" follows, once "high" is Ready.
	readyAt := prioMakeReady(ctx, t, mid, "high")
	waitCloneSet(ctx, t, kc, ns, name, 1)
	after := clonePods(ctx, t, f, ns, name)[0]
	if after.UID != before.UID {
		t.Fatalf("pod %s was recreated", after.Name)
	}
	high, low := framework.ContainerStatusOf(&after, "high"), framework.ContainerStatusOf(&after, "low")
	if high.RestartCount != highBefore.RestartCount+1 || low.RestartCount != lowBefore.RestartCount+1 {
		t.Errorf("restarts: high %d (was %d), low %d (was %d); want each restarted once", high.RestartCount, highBefore.RestartCount, low.RestartCount, lowBefore.RestartCount)
	}
	// startedAt has a resolution of 1 s: "low" started in the second "high" became Ready or later.
	if low.State.Running == nil || low.State.Running.StartedAt.Time.Before(readyAt.Truncate(time.Second)) {
		t.Errorf("container low (%s) started before container high was made Ready at %s", framework.DescribeContainerStatus(low), readyAt.Format(time.RFC3339))
	}
	final, doc := inPlaceStateOf(t, &after)
	t.Logf("final state: %s", after.Annotations[pub.InPlaceUpdateStateKey])
	checkStateKeys(t, after.Name, doc, "revision", "updateTimestamp", "lastContainerStatuses", "containerBatchesRecord")
	if final.Revision != revision || !final.UpdateTimestamp.Equal(&state.UpdateTimestamp) {
		t.Errorf("final state revision %q at %s, want %q at %s (unchanged)", final.Revision, final.UpdateTimestamp, revision, state.UpdateTimestamp)
	}
	if got := batchNames(final); fmt.Sprint(got) != "[[high] [low]]" {
		t.Errorf("final containerBatchesRecord %v, want [[high] [low]]", got)
	} else if b2 := final.ContainerBatchesRecord[1].Timestamp.Time; b2.Before(readyAt.Truncate(time.Second)) {
		t.Errorf("batch 2 recorded at %s, before container high was made Ready at %s", b2.Format(time.RFC3339), readyAt.Format(time.RFC3339))
	}
	wantLast["low"] = pub.InPlaceUpdateContainerStatus{ImageID: lowBefore.ImageID, ContainerID: lowBefore.ContainerID}
	if fmt.Sprint(final.LastContainerStatuses) != fmt.Sprint(wantLast) {
		t.Errorf("final lastContainerStatuses %+v, want %+v", final.LastContainerStatuses, wantLast)
	}
	for _, c := range []string{"high", "low"} {
		last, _ := doc["lastContainerStatuses"].(map[string]any)[c].(map[string]any)
		if id, _ := last["imageID"].(string); id == "" {
			t.Errorf("final lastContainerStatuses[%s] has no imageID: %v", c, doc["lastContainerStatuses"])
		}
	}
	if c := framework.PodConditionOf(&after, pub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("pod %s: condition %s = %+v after the update, want True", after.Name, pub.InPlaceUpdateReady, c)
	}
}
