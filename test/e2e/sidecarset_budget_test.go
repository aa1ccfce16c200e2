//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// One tenant's crash-looping pod must not hold back a sidecar upgrade everywhere: maxUnavailable
// (1, the default) bounds the unavailability the SidecarSet's own upgrades cause, and a pod that
// was not Ready before its upgrade is not one of them. With such a pod among those it matches,
// every Ready pod is upgraded, one at a time.
func TestSidecarSetUpgradeNotHeldByABrokenPod(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 8*time.Minute)
	ns := f.NewNamespace(ctx, t, "ssbroken")
	name := ns + "-sc"
	upgradeSidecarSet(ctx, t, f, kc, ns, name)
	before := injectedPods(ctx, t, f, ns, name, 3)

	broken := f.BusyboxPod(ns, name+"-broken", "main")
	broken.Labels = map[string]string{"app": name}
	broken.Spec.Containers[0].Command = []string{"sh", "-c", "exit 1"}
	if _, err := f.Client.CoreV1().Pods(ns).Create(ctx, broken, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", broken.Name, err)
	}
	framework.WaitFor(ctx, t, sidecarSetTimeout, "the broken pod crash-looping, its sidecars running", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, broken.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		main, agent := framework.ContainerStatusOf(p, "main"), framework.ContainerStatusOf(p, "agent")
		return main != nil && main.RestartCount > 0 && !podReady(p) && agent != nil && agent.Ready,
			fmt.Sprintf("main %s; agent %s", framework.DescribeContainerStatus(main), framework.DescribeContainerStatus(agent)), nil
	})
	waitSidecarSetStatus(ctx, t, kc, name, "counting 4 pods, 3 ready", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 4 && s.UpdatedPods == 4 && s.ReadyPods == 3
	})

	variant := f.BusyboxVariant(t)
	setSidecarImages(ctx, t, kc, name, variant)
	framework.WaitFor(ctx, t, sidecarSetTimeout, "every Ready pod's sidecars at the new image", func(ctx context.Context) (bool, string, error) {
		pods := clonePods(ctx, t, f, ns, name)
		var at, healthy []corev1.Pod
		for i := range pods {
			if _, ok := before[pods[i].Name]; !ok {
				continue
			}
			healthy = append(healthy, pods[i])
			if sidecarsAt(&pods[i], variant) {
				at = append(at, pods[i])
			}
		}
		if down := unavailable(healthy, before, variant); len(down) > 1 {
			t.Errorf("pods %v unavailable at once: maxUnavailable is 1", down)
		}
		return len(at) == len(before), fmt.Sprintf("%d of %d healthy pods at the new image", len(at), len(before)), nil
	})
	waitSidecarSetStatus(ctx, t, kc, name, "with the healthy pods updated and ready", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 4 && s.UpdatedReadyPods == 3
	})
}
