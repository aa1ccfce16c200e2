//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
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
	restarts := map[types.UID]map[string]int32{}
	for _, p := range before {
		restarts[p.UID] = map[string]int32{}
		for _, st := range p.Status.ContainerStatuses {
			restarts[p.UID][st.Name] = st.RestartCount
		}
	}
	old, err := kc.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	if out := plugin.MustRun(ctx, t, "-n", ns, "rollout", "restart", "cloneset/web"); out != "cloneset.apps.kruise.io/web restarted\n" {
		t.Errorf("restart: %q", out)
	}
	out := plugin.MustRun(ctx, t, "-n", ns, "rollout", "status", "-w", "cloneset/web", "--timeout=4m")
	if !strings.HasSuffix(strings.TrimSpace(out), `CloneSet "web" successfully rolled out`) {
		t.Errorf("rollout status did not end with the success line:\n%s", out)
	}

	// The status can say rolled out a moment before the kubelet reports the last pod's second
	// container ready; wait for the counts, with a deadline.
	framework.WaitFor(ctx, t, time.Minute, "every container restarted once, in the same pods", func(ctx context.Context) (bool, string, error) {
		pods := clonePods(ctx, t, f, ns, "web")
		var why []string
		for _, p := range pods {
			was, ok := restarts[p.UID]
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
		return len(pods) == 2 && len(why) == 0, strings.Join(why, ", "), nil
	})
	cur := waitCloneSet(ctx, t, kc, ns, "web", 2)
	if cur.Status.UpdateRevision == old.Status.UpdateRevision {
		t.Errorf("update revision %s unchanged: the restart is not a rollout", cur.Status.UpdateRevision)
	}
}
