package rollout

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	"github.com/nodekruise/kruise/test/unit/gen"
	"github.com/nodekruise/kruise/test/unit/golden"
)

// `status --watch=false` prints one line per kind and state, and fails only
// on a passed progress deadline.
func TestStatusOnce(t *testing.T) {
	hooked := func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"ok": "true"}}}
	}
	stalled := func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.ProgressDeadlineSeconds = ptr.To[int32](30)
		cs.Status.Conditions = []appsv1alpha1.CloneSetCondition{{
			Type: appsv1alpha1.CloneSetConditionTypeProgressing, Status: corev1.ConditionFalse,
			Reason: string(appsv1alpha1.CloneSetProgressDeadlineExceeded), Message: `CloneSet "web" has timed out progressing.`,
		}}
	}
	cases := []struct {
		name    string
		args    []string
		kube    []runtime.Object
		kruise  []runtime.Object
		wantErr string
	}{
		{name: "cloneset-done", args: []string{"cloneset/web"}, kruise: []runtime.Object{newCloneSet()}},
		{name: "cloneset-partitioned", args: []string{"clone", "web"},
			kruise: []runtime.Object{newCloneSet(withPartition(1), withUpdated(3, 3))}},
		{name: "cloneset-partition-not-reached", args: []string{"clone/web"},
			kruise: []runtime.Object{newCloneSet(withPartition(1), withUpdated(2, 1))}},
		{name: "cloneset-percent-partition", args: []string{"clone/web"}, // 99% of 4 holds 3 back, as the controller reads it
			kruise: []runtime.Object{newCloneSet(func(cs *appsv1alpha1.CloneSet) {
				cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("99%"))
			}, withUpdated(0, 0))}},
		{name: "cloneset-paused", args: []string{"clonesets.apps.kruise.io/web"},
			kruise: []runtime.Object{newCloneSet(withUpdated(1, 1), func(cs *appsv1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Paused = true })}},
		{name: "cloneset-not-observed", args: []string{"clone/web"},
			kruise: []runtime.Object{newCloneSet(func(cs *appsv1alpha1.CloneSet) { cs.Generation = 3 })}},
		{name: "cloneset-hooks-and-batches", args: []string{"clone/web"},
			kruise: []runtime.Object{newCloneSet(withUpdated(2, 1), hooked)},
			kube: []runtime.Object{
				pod("web-a", "cs-uid", "web-v2", true),
				pod("web-b", "cs-uid", "web-v2", false, inPlaceState(t)),
				pod("web-c", "cs-uid", "web-v1", true, gen.AddPodLabels(map[string]string{pub.LifecycleStateKey: string(pub.LifecycleStatePreparingUpdate)})),
				pod("web-d", "other-uid", "web-v1", true, gen.AddPodLabels(map[string]string{pub.LifecycleStateKey: string(pub.LifecycleStatePreparingUpdate)})),
			}},
		{name: "cloneset-deadline-exceeded", args: []string{"clone/web"},
			kruise:  []runtime.Object{newCloneSet(withUpdated(1, 0), stalled)},
			wantErr: `CloneSet "web" rollout exceeded its progress deadline: CloneSet "web" has timed out progressing.`},
		{name: "asts-done", args: []string{"asts/db"}, kruise: []runtime.Object{newAdvancedStatefulSet(3, 3, 0, false)}},
		{name: "asts-partitioned", args: []string{"statefulset.apps.kruise.io/db"}, kruise: []runtime.Object{newAdvancedStatefulSet(1, 1, 2, false)}},
		{name: "asts-paused", args: []string{"asts/db"}, kruise: []runtime.Object{newAdvancedStatefulSet(1, 1, 0, true)}},
		{name: "ads-done", args: []string{"ads/agent"}, kruise: []runtime.Object{newAdvancedDaemonSet(2, 2)},
			kube: []runtime.Object{pod("agent-a", "ads-uid", "agent-v1", true), pod("agent-b", "ads-uid", "agent-v1", true)}},
		{name: "ads-progressing", args: []string{"ads/agent"}, kruise: []runtime.Object{newAdvancedDaemonSet(1, 1)},
			kube: []runtime.Object{pod("agent-a", "ads-uid", "agent-v1", false), pod("agent-b", "ads-uid", "agent-v0", true)}},
		{name: "deployment-progressing", args: []string{"deploy/web"}, kube: []runtime.Object{&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Generation: 1},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 1, AvailableReplicas: 3},
		}}},
		{name: "statefulset-done", args: []string{"sts/db"}, kube: []runtime.Object{&appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, Generation: 1},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2),
				UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
				UpdatedReplicas: 2, CurrentReplicas: 2, CurrentRevision: "db-1", UpdateRevision: "db-1"},
		}}},
		{name: "daemonset-done", args: []string{"ds/agent"}, kube: []runtime.Object{&appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns, Generation: 1},
			Spec:       appsv1.DaemonSetSpec{UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 2, UpdatedNumberScheduled: 2,
				NumberAvailable: 2},
		}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(c.kube, c.kruise)
			out, err := h.run(context.Background(), append([]string{"status", "--watch=false"}, c.args...)...)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
			} else if err != nil {
				t.Fatalf("status: %v", err)
			}
			golden.Assert(t, "status-"+c.name, out)
		})
	}
}

// Unknown kinds and malformed arguments are refused with what to type.
func TestStatusRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{{"pod/web"}, {"web"}, {"clone/"}} {
		h := newHarness(nil, nil)
		_, err := h.run(context.Background(), append([]string{"status"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "clone") {
			t.Errorf("status %v: %v, want an error naming the kinds or the form cloneset/web", args, err)
		}
	}
	h := newHarness(nil, nil)
	_, err := h.run(context.Background(), "status", "clone/missing")
	if err == nil || !strings.Contains(err.Error(), `CloneSet "missing" in namespace "prod"`) {
		t.Errorf("status of a missing CloneSet: %v, want an error naming it", err)
	}
}

// watchedCloneSet starts `status args` against a CloneSet whose watch the
// test drives, and returns the watcher once the command has shown the first
// state, and the command's result.
func watchedCloneSet(t *testing.T, h *harness, args ...string) (*watch.FakeWatcher, <-chan error) {
	t.Helper()
	watcher := watch.NewFake()
	h.kruise.PrependWatchReactor("clonesets", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, watcher, nil
	})
	h.writes = make(chan string, 100)
	done := make(chan error, 1)
	go func() {
		_, err := h.run(context.Background(), append([]string{"status"}, args...)...)
		done <- err
	}()
	nextWrite(t, h, done)
	return watcher, done
}

// nextWrite waits for the command's next write to its output.
func nextWrite(t *testing.T, h *harness, done <-chan error) string {
	t.Helper()
	select {
	case w := <-h.writes:
		return w
	case err := <-done:
		t.Fatalf("status ended, want it to show more: %v\n%s", err, h.out.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("status showed nothing new:\n%s", h.out.String())
	}
	return ""
}

func waitResult(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("status did not end")
		return nil
	}
}

// Piped, `status -w` prints a line per change and ends when the rollout
// is done.
func TestStatusWatchPiped(t *testing.T) {
	h := newHarness(nil, []runtime.Object{newCloneSet(withUpdated(1, 0))})
	watcher, done := watchedCloneSet(t, h, "-w", "cloneset/web")
	// A change that leaves the line as it was prints nothing.
	watcher.Modify(newCloneSet(withUpdated(1, 0), func(cs *appsv1alpha1.CloneSet) { cs.ResourceVersion = "8" }))
	watcher.Modify(newCloneSet(withUpdated(3, 2), func(cs *appsv1alpha1.CloneSet) { cs.ResourceVersion = "9" }))
	nextWrite(t, h, done)
	watcher.Modify(newCloneSet(func(cs *appsv1alpha1.CloneSet) { cs.ResourceVersion = "10" }))
	if err := waitResult(t, done); err != nil {
		t.Fatalf("status -w: %v", err)
	}
	golden.Assert(t, "status-watch-piped", h.out.String())
}

// On a terminal the view is redrawn in place, and ends with the summary.
func TestStatusWatchTerminal(t *testing.T) {
	hooked := func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{"example.com/drain"}}}
	}
	h := newHarness([]runtime.Object{
		pod("web-a", "cs-uid", "web-v2", false, inPlaceState(t)),
		pod("web-b", "cs-uid", "web-v1", true, gen.AddPodLabels(map[string]string{pub.LifecycleStateKey: string(pub.LifecycleStatePreparingDelete)})),
	}, []runtime.Object{newCloneSet(withPartition(1), withUpdated(1, 0), hooked)})
	h.terminal = true
	watcher, done := watchedCloneSet(t, h, "cloneset/web")
	watcher.Modify(newCloneSet(withPartition(1), withUpdated(3, 3), hooked, func(cs *appsv1alpha1.CloneSet) { cs.ResourceVersion = "8" }))
	if err := waitResult(t, done); err != nil {
		t.Fatalf("status: %v", err)
	}
	out := h.out.String()
	if !strings.Contains(out, "\x1b[4A\x1b[J") {
		t.Errorf("the second screen does not move up over the first's 4 lines:\n%q", out)
	}
	golden.Assert(t, "status-watch-terminal", out)
}

// A stall seen while watching fails the command with the condition's message.
func TestStatusWatchStalls(t *testing.T) {
	h := newHarness(nil, []runtime.Object{newCloneSet(withUpdated(1, 0))})
	watcher, done := watchedCloneSet(t, h, "cloneset/web")
	watcher.Modify(newCloneSet(withUpdated(1, 0), func(cs *appsv1alpha1.CloneSet) {
		cs.ResourceVersion = "8"
		cs.Status.Conditions = []appsv1alpha1.CloneSetCondition{{Type: appsv1alpha1.CloneSetConditionTypeProgressing,
			Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "no progress for 30s"}}
	}))
	err := waitResult(t, done)
	if err == nil || !strings.Contains(err.Error(), "exceeded its progress deadline: no progress for 30s") {
		t.Fatalf("status of a stalled rollout: %v, want the deadline error", err)
	}
}

// --timeout ends a watch that sees no progress.
func TestStatusTimeout(t *testing.T) {
	h := newHarness(nil, []runtime.Object{newAdvancedStatefulSet(1, 0, 0, false)})
	_, err := h.run(context.Background(), "status", "asts/db", "--timeout=500ms")
	if err == nil || !strings.Contains(err.Error(), `Advanced StatefulSet "db" rollout did not finish within 500ms: 1 of 3 updated, 0 ready`) {
		t.Fatalf("status --timeout: %v, want the timeout error with the progress", err)
	}
}

// --revision pins the rollout to the update revision's number.
func TestStatusRevision(t *testing.T) {
	rev := controllerRevision(t, "web-v2", "cs-uid", 2, "busybox:2")
	h := newHarness([]runtime.Object{rev}, []runtime.Object{newCloneSet()})
	if _, err := h.run(context.Background(), "status", "clone/web", "--revision=2"); err != nil {
		t.Errorf("status --revision=2 of revision 2: %v", err)
	}
	_, err := h.run(context.Background(), "status", "clone/web", "--revision=1")
	if err == nil || !strings.Contains(err.Error(), "desired revision (1) is different from the running revision (2)") {
		t.Errorf("status --revision=1 of revision 2: %v, want the mismatch", err)
	}
}
