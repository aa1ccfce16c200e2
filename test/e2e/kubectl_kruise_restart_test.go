//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// `kubectl kruise rollout restart` on an in-place CloneSet restarts every container of every pod
// in place, one pod at a time (maxUnavailable 1): each container's restartCount goes up by
// exactly one, the pods keep their UIDs, and `rollout status` follows the rollout to its end.
func TestKubectlKruiseRolloutRestartInPlace(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	plugin := framework.KubectlKruise(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "kk-restart")

	cs := busyboxCloneSet(f, ns, "web", 2, appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	cs.Spec.Template.Spec.Containers = append(cs.Spec.Template.Spec.Containers, f.BusyboxContainer("sidecar"))
	createCloneSet(ctx, t, kc, cs)
	before := waitPodsSettled(ctx, t, f, kc, ns, "web", 2)
	restarts := restartCounts(before)
	old, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restartAndFollow(ctx, t, plugin, ns, "cloneset/web", "cloneset.apps.kruise.io/web", `CloneSet "web" successfully rolled out`)
	waitRestartedOnceInPlace(ctx, t, f, ns, "web", restarts)
	cur := waitCloneSet(ctx, t, kc, ns, "web", 2)
	if cur.Status.UpdateRevision == old.Status.UpdateRevision {
		t.Errorf("update revision %s unchanged: the restart is not a rollout", cur.Status.UpdateRevision)
	}
}

// The same on an in-place Advanced StatefulSet: its pods keep their UIDs (and names), each
// container restarted once, in ordinal order at maxUnavailable 1.
func TestKubectlKruiseRolloutRestartInPlaceStatefulSet(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	plugin := framework.KubectlKruise(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "kk-restart-asts")

	set := busyboxStatefulSet(f, ns, "db", 2)
	set.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	set.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{PodUpdatePolicy: appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType}
	if _, err := kc.AppsV1beta1().StatefulSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Advanced StatefulSet: %v", err)
	}
	old := waitStatefulSet(ctx, t, f, kc, ns, "db", "db-0", "db-1")
	restarts := restartCounts(stsPods(ctx, t, f, ns, "db"))

	restartAndFollow(ctx, t, plugin, ns, "asts/db", "statefulset.apps.kruise.io/db", `Advanced StatefulSet "db" successfully rolled out`)
	waitRestartedOnceInPlace(ctx, t, f, ns, "db", restarts)
	if cur := waitStatefulSet(ctx, t, f, kc, ns, "db", "db-0", "db-1"); cur.Status.UpdateRevision == old.Status.UpdateRevision {
		t.Errorf("update revision %s unchanged: the restart is not a rollout", cur.Status.UpdateRevision)
	}
}

// restartCounts is each container's restartCount, per pod UID.
func restartCounts(pods map[string]corev1.Pod) map[types.UID]map[string]int32 {
	out := map[types.UID]map[string]int32{}
	for _, p := range pods {
		out[p.UID] = map[string]int32{}
		for _, st := range p.Status.ContainerStatuses {
			out[p.UID][st.Name] = st.RestartCount
		}
	}
	return out
}

// restartAndFollow runs `rollout restart` on workload, then `rollout status -w` until its last
// line says done.
func restartAndFollow(ctx context.Context, t *testing.T, plugin *framework.KubectlKruisePlugin, ns, workload, ref, done string) {
	t.Helper()
	if out := plugin.MustRun(ctx, t, "-n", ns, "rollout", "restart", workload); out != ref+" restarted\n" {
		t.Errorf("restart %s: %q", workload, out)
	}
	out := plugin.MustRun(ctx, t, "-n", ns, "rollout", "status", "-w", workload, "--timeout=4m")
	if !strings.Contains(out, done) {
		t.Errorf("rollout status %s does not end with %q:\n%s", workload, done, out)
	}
}

// waitRestartedOnceInPlace waits until the pods labelled app=name are those of before (by UID),
// each container restarted exactly once since and ready; a pod replaced, or a container restarted
// twice, fails at once.
func waitRestartedOnceInPlace(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string, before map[types.UID]map[string]int32) {
	t.Helper()
	// rollout status can say done a moment before the kubelet reports the last container ready.
	framework.WaitFor(ctx, t, time.Minute, "every container restarted once, in the same pods", func(ctx context.Context) (bool, string, error) {
		pods := clonePods(ctx, t, f, ns, name)
		var why []string
		for _, p := range pods {
			was, ok := before[p.UID]
			if !ok {
				return false, "", fmt.Errorf("pod %s (%s) is new: the restart replaced a pod", p.Name, p.UID)
			}
			for _, st := range p.Status.ContainerStatuses {
				switch {
				case st.RestartCount > was[st.Name]+1:
					return false, "", fmt.Errorf("pod %s container %s restarted %d times, want once", p.Name, st.Name, st.RestartCount-was[st.Name])
				case st.RestartCount != was[st.Name]+1 || !st.Ready:
					why = append(why, fmt.Sprintf("%s/%s restarts %d ready %t", p.Name, st.Name, st.RestartCount-was[st.Name], st.Ready))
				}
			}
		}
		return len(pods) == len(before) && len(why) == 0, strings.Join(why, ", "), nil
	})
}
