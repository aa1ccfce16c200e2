//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// A lifecycle hook is held by a pod label (labelsHandler) or a pod finalizer (finalizersHandler);
// every hook test runs once with each.
type hookKind string

const (
	hookByLabel     hookKind = "labels"
	hookByFinalizer hookKind = "finalizers"
)

// hookKey is the label key or finalizer of the tests' hooks; a label hook wants the value "true".
const hookKey = "example.com/e2e-hook"

// hookSpec is a hook of kind on hookKey.
func hookSpec(kind hookKind, markPodNotReady bool) *pub.LifecycleHook {
	h := &pub.LifecycleHook{MarkPodNotReady: markPodNotReady}
	if kind == hookByLabel {
		h.LabelsHandler = map[string]string{hookKey: "true"}
	} else {
		h.FinalizersHandler = []string{hookKey}
	}
	return h
}

// hookOn puts the hook on meta (a template's or a pod's) or, with on false, takes it off.
func hookOn(meta *metav1.ObjectMeta, kind hookKind, on bool) {
	switch {
	case kind == hookByLabel && on:
		if meta.Labels == nil {
			meta.Labels = map[string]string{}
		}
		meta.Labels[hookKey] = "true"
	case kind == hookByLabel:
		delete(meta.Labels, hookKey)
	case on && !slices.Contains(meta.Finalizers, hookKey):
		meta.Finalizers = append(meta.Finalizers, hookKey)
	case !on:
		meta.Finalizers = slices.DeleteFunc(meta.Finalizers, func(f string) bool { return f == hookKey })
	}
}

// hookSet puts the hook on the pod or takes it off, as a user's hook controller does.
func hookSet(ctx context.Context, t *testing.T, f *framework.Framework, ns, pod string, kind hookKind, on bool) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		hookOn(&p.ObjectMeta, kind, on)
		_, err = f.Client.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting hook %s (%s) on pod %s to %t: %v", hookKey, kind, pod, on, err)
	}
}

// hookCleanup takes the hook's finalizer off every pod of the CloneSet when the test ends, so its
// namespace can go.
func hookCleanup(t *testing.T, f *framework.Framework, ns, name string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, p := range clonePods(ctx, t, f, ns, name) {
			if slices.Contains(p.Finalizers, hookKey) {
				hookSet(ctx, t, f, ns, p.Name, hookByFinalizer, false)
			}
		}
	})
}

// hookCloneSet is a one-pod CloneSet of busybox named name with lifecycle lc. Its template does
// not list the KruisePodReady readiness gate markPodNotReady needs, as manifests written for
// OpenKruise do not: the CloneSet gives its pods that gate.
func hookCloneSet(f *framework.Framework, ns, name string, replicas int32, lc *pub.Lifecycle) *appsv1alpha1.CloneSet {
	cs := busyboxCloneSet(f, ns, name, replicas, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)
	cs.Spec.Lifecycle = lc
	return cs
}

func lifecycleState(p *corev1.Pod) pub.LifecycleStateType {
	return pub.LifecycleStateType(p.Labels[pub.LifecycleStateKey])
}

// kruisePodReady is the status of the pod's KruisePodReady condition ("" when it has none).
func kruisePodReady(p *corev1.Pod) corev1.ConditionStatus {
	if c := framework.PodConditionOf(p, pub.KruisePodReady); c != nil {
		return c.Status
	}
	return ""
}

// clonePodRecord records every version of the pods of one CloneSet a watch shows, from when it
// starts until the test ends.
type clonePodRecord struct {
	mu   sync.Mutex
	pods []corev1.Pod
}

// recordClonePods starts recording the pods of CloneSet name.
func recordClonePods(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string) *clonePodRecord {
	t.Helper()
	r := &clonePodRecord{}
	pods := f.Client.CoreV1().Pods(ns)
	opts := metav1.ListOptions{LabelSelector: "app=" + name}
	list, err := pods.List(ctx, opts)
	if err != nil {
		t.Fatalf("listing the pods of %s: %v", name, err)
	}
	r.pods = append(r.pods, list.Items...)
	wctx, cancel := context.WithCancel(ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(wctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = opts.LabelSelector
			return pods.Watch(ctx, o)
		},
	})
	if err != nil {
		cancel()
		t.Fatalf("watching the pods of %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range rw.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				r.mu.Lock()
				r.pods = append(r.pods, *p)
				r.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		rw.Stop()
		<-done
	})
	return r
}

// versions returns every version of pod uid recorded so far, oldest first.
func (r *clonePodRecord) versions(uid types.UID) []corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []corev1.Pod
	for _, p := range r.pods {
		if p.UID == uid {
			out = append(out, p)
		}
	}
	return out
}

// states lists the lifecycle states pod uid went through, without repeats in a row.
func (r *clonePodRecord) states(uid types.UID) []pub.LifecycleStateType {
	var out []pub.LifecycleStateType
	for _, p := range r.versions(uid) {
		if s := lifecycleState(&p); len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// A preNormal hook keeps a new pod in PreparingNormal, running but not available, until all of
// the hook is on the pod; then the pod is Normal and the CloneSet counts it available.
func TestCloneSetPreNormalHook(t *testing.T) {
	t.Parallel()
	for _, kind := range []hookKind{hookByLabel, hookByFinalizer} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			f := framework.New(t)
			kc := f.KruiseClient(t)
			ctx := framework.Context(t, 5*time.Minute)
			ns := f.NewNamespace(ctx, t, "cloneset-prenormal")
			const name = "prenormal"
			cs := hookCloneSet(f, ns, name, 1, &pub.Lifecycle{PreNormal: hookSpec(kind, false)})
			if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating CloneSet: %v", err)
			}
			hookCleanup(t, f, ns, name)

			pod := waitClonePod(ctx, t, f, ns, name, "the pod Ready in PreparingNormal", func(p *corev1.Pod) bool {
				return framework.PodReady(p) && lifecycleState(p) == pub.LifecycleStatePreparingNormal
			})
			framework.Consistently(ctx, t, 3*time.Second, "the pod held in PreparingNormal, not available", func(ctx context.Context) (bool, string, error) {
				p, err := f.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				c, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				return lifecycleState(p) == pub.LifecycleStatePreparingNormal && c.Status.AvailableReplicas == 0,
					fmt.Sprintf("state %s; CloneSet available %d", lifecycleState(p), c.Status.AvailableReplicas), nil
			})

			hookSet(ctx, t, f, ns, pod.Name, kind, true)
			waitClonePod(ctx, t, f, ns, name, "the pod Normal", func(p *corev1.Pod) bool {
				return p.UID == pod.UID && lifecycleState(p) == pub.LifecycleStateNormal
			})
			waitCloneSet(ctx, t, kc, ns, name, 1)
		})
	}
}

// An inPlaceUpdate hook with markPodNotReady: the pod chosen for an update goes PreparingUpdate,
// with KruisePodReady False (out of its Services), and is not updated while the hook is on it.
// Once the hook's owner takes it off, the pod is updated in place (Updating), waits in Updated
// until the hook is back, and is then Normal and Ready again.
func TestCloneSetInPlaceUpdateHook(t *testing.T) {
	t.Parallel()
	for _, kind := range []hookKind{hookByLabel, hookByFinalizer} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			f := framework.New(t)
			kc := f.KruiseClient(t)
			ctx := framework.Context(t, 6*time.Minute)
			ns := f.NewNamespace(ctx, t, "cloneset-updatehook")
			const name = "updatehook"
			variant := f.BusyboxVariant(t)
			cs := hookCloneSet(f, ns, name, 1, &pub.Lifecycle{InPlaceUpdate: hookSpec(kind, true)})
			// New pods carry the hook from the start, as its owner would want.
			hookOn(&cs.Spec.Template.ObjectMeta, kind, true)
			if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating CloneSet: %v", err)
			}
			hookCleanup(t, f, ns, name)
			waitCloneSet(ctx, t, kc, ns, name, 1)
			before := clonePods(ctx, t, f, ns, name)[0]
			if s := lifecycleState(&before); s != pub.LifecycleStateNormal || kruisePodReady(&before) != corev1.ConditionTrue {
				t.Fatalf("pod %s in state %q with KruisePodReady %q, want Normal and True", before.Name, s, kruisePodReady(&before))
			}
			oldID := framework.ContainerStatusOf(&before, "main").ContainerID
			rec := recordClonePods(ctx, t, f, ns, name)

			patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, variant)
			if _, err := kc.AppsV1alpha1().CloneSets(ns).Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatalf("patching the image: %v", err)
			}
			waitClonePod(ctx, t, f, ns, name, "the pod PreparingUpdate, KruisePodReady False, not Ready", func(p *corev1.Pod) bool {
				return lifecycleState(p) == pub.LifecycleStatePreparingUpdate && kruisePodReady(p) == corev1.ConditionFalse && !framework.PodReady(p)
			})
			framework.Consistently(ctx, t, 3*time.Second, "the pod not updated while the hook is on", func(ctx context.Context) (bool, string, error) {
				p, err := f.Client.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				st := framework.ContainerStatusOf(p, "main")
				return lifecycleState(p) == pub.LifecycleStatePreparingUpdate && p.Spec.Containers[0].Image == before.Spec.Containers[0].Image &&
						st != nil && st.ContainerID == oldID,
					fmt.Sprintf("state %s image %s; %s", lifecycleState(p), p.Spec.Containers[0].Image, framework.DescribeContainerStatus(st)), nil
			})

			hookSet(ctx, t, f, ns, before.Name, kind, false)
			updated := waitClonePod(ctx, t, f, ns, name, "the pod updated, waiting in Updated for the hook", func(p *corev1.Pod) bool {
				st := framework.ContainerStatusOf(p, "main")
				return lifecycleState(p) == pub.LifecycleStateUpdated && st != nil && st.ContainerID != oldID && st.Ready
			})
			if updated.UID != before.UID || updated.Spec.Containers[0].Image != variant {
				t.Errorf("pod %s (uid %s) runs %s, want the same pod (uid %s) with %s", updated.Name, updated.UID, updated.Spec.Containers[0].Image, before.UID, variant)
			}
			if kruisePodReady(updated) != corev1.ConditionTrue {
				t.Errorf("pod %s in Updated with KruisePodReady %q, want True (the hold is released once updated)", updated.Name, kruisePodReady(updated))
			}
			framework.Consistently(ctx, t, 2*time.Second, "the pod kept in Updated until the hook is back", func(ctx context.Context) (bool, string, error) {
				p, err := f.Client.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				return lifecycleState(p) == pub.LifecycleStateUpdated, "state " + string(lifecycleState(p)), nil
			})

			hookSet(ctx, t, f, ns, before.Name, kind, true)
			waitClonePod(ctx, t, f, ns, name, "the pod Normal", func(p *corev1.Pod) bool { return lifecycleState(p) == pub.LifecycleStateNormal })
			waitCloneSet(ctx, t, kc, ns, name, 1)

			want := []pub.LifecycleStateType{pub.LifecycleStateNormal, pub.LifecycleStatePreparingUpdate, pub.LifecycleStateUpdating,
				pub.LifecycleStateUpdated, pub.LifecycleStateNormal}
			if got := rec.states(before.UID); !slices.Equal(got, want) {
				t.Errorf("lifecycle states %v, want %v", got, want)
			}
			// Held not-ready from the moment it entered PreparingUpdate until the update was done
			// (InPlaceUpdateReady True, not merely released to the kubelet while it restarts the
			// containers): the hold is released, as in OpenKruise, just before the state Updated
			// is written.
			for _, p := range rec.versions(before.UID) {
				s := lifecycleState(&p)
				done := framework.PodConditionOf(&p, pub.InPlaceUpdateReady)
				finished := done != nil && done.Status == corev1.ConditionTrue && done.Reason != pub.InPlaceUpdateRestartingReason
				inFlight := s == pub.LifecycleStatePreparingUpdate || (s == pub.LifecycleStateUpdating && !finished)
				if inFlight && kruisePodReady(&p) != corev1.ConditionFalse {
					t.Errorf("pod version %s in state %s (update not done) with KruisePodReady %q, want False", p.ResourceVersion, s, kruisePodReady(&p))
				}
			}
		})
	}
}

// preDelete by label with markPodNotReady (TestCloneSetPreDeleteHook covers the finalizer): a pod
// chosen for scale-in waits in PreparingDelete, out of its Services, while the label is on it,
// and is deleted once the label is taken off.
func TestCloneSetPreDeleteHookByLabel(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-predelete")
	const name = "predelete"
	cs := hookCloneSet(f, ns, name, 2, &pub.Lifecycle{PreDelete: hookSpec(hookByLabel, true)})
	hookOn(&cs.Spec.Template.ObjectMeta, hookByLabel, true)
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CloneSet: %v", err)
	}
	waitCloneSet(ctx, t, kc, ns, name, 2)

	if _, err := kc.AppsV1alpha1().CloneSets(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("scaling to 1: %v", err)
	}
	var held corev1.Pod
	framework.WaitFor(ctx, t, cloneSetTimeout, "a pod in PreparingDelete with KruisePodReady False", func(ctx context.Context) (bool, string, error) {
		var seen []string
		for _, p := range clonePods(ctx, t, f, ns, name) {
			seen = append(seen, fmt.Sprintf("%s=%s/%s", p.Name, lifecycleState(&p), kruisePodReady(&p)))
			if lifecycleState(&p) == pub.LifecycleStatePreparingDelete && kruisePodReady(&p) == corev1.ConditionFalse {
				held = p
				return true, "", nil
			}
		}
		return false, strings.Join(seen, " "), nil
	})
	framework.Consistently(ctx, t, 3*time.Second, "the held pod not deleted", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, held.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		return p.DeletionTimestamp == nil && p.UID == held.UID, fmt.Sprintf("deletionTimestamp %v", p.DeletionTimestamp), nil
	})

	hookSet(ctx, t, f, ns, held.Name, hookByLabel, false)
	framework.WaitFor(ctx, t, cloneSetTimeout, "the released pod gone, one left", func(ctx context.Context) (bool, string, error) {
		pods := clonePods(ctx, t, f, ns, name)
		for _, p := range pods {
			if p.UID == held.UID {
				return false, "still there", nil
			}
		}
		return len(pods) == 1, fmt.Sprintf("%d pods", len(pods)), nil
	})
	waitCloneSet(ctx, t, kc, ns, name, 1)
}
