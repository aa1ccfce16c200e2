//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// A change of a sidecar's cpu and memory is upgraded in place through pods/resize (a kruise
// addition: OpenKruise's SidecarSet leaves such pods not updated): every pod keeps its UID, the
// resized sidecar is not restarted (resizePolicy NotRequired), the kubelet reports the new
// resources, and the status counts every pod updated and ready.
func TestSidecarSetResizesSidecarInPlace(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	f.SkipWithoutResize(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 6*time.Minute)
	ns := f.NewNamespace(ctx, t, "ssresize")
	name := ns + "-sc"
	sized := func(cpu, mem string) corev1.ResourceRequirements {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		return corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
	}
	upgradeSidecarSet(ctx, t, f, kc, ns, name, func(ss *appsv1beta1.SidecarSet) {
		ss.Spec.Containers[0].Resources = sized("20m", "16Mi")
	})
	before := injectedPods(ctx, t, f, ns, name, 2)
	waitSidecarSetStatus(ctx, t, kc, name, "counting 2 pods", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 2 && s.UpdatedPods == 2 && s.ReadyPods == 2 && s.LatestRevision != ""
	})

	want := sized("40m", "24Mi")
	patch := `[{"op":"replace","path":"/spec/containers/0/resources","value":` +
		`{"requests":{"cpu":"40m","memory":"24Mi"},"limits":{"cpu":"40m","memory":"24Mi"}}}]`
	if _, err := kc.AppsV1beta1().SidecarSets().Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("changing the sidecar's resources: %v", err)
	}
	framework.WaitFor(ctx, t, sidecarSetTimeout, "every pod's agent resized and reported by the kubelet", func(ctx context.Context) (bool, string, error) {
		var seen []string
		done := 0
		for _, p := range clonePods(ctx, t, f, ns, name) {
			c, st := framework.ContainerSpecOf(&p, "agent"), framework.ContainerStatusOf(&p, "agent")
			if c == nil || st == nil || st.Resources == nil {
				seen = append(seen, p.Name+": no agent resources reported")
				continue
			}
			seen = append(seen, fmt.Sprintf("%s: spec %s, reported %s", p.Name, describeResources(c.Resources), describeResources(*st.Resources)))
			if sameResources(c.Resources, want) && sameResources(*st.Resources, want) {
				done++
			}
		}
		return done == 2, strings.Join(seen, "; "), nil
	})
	waitSidecarSetStatus(ctx, t, kc, name, "with every pod updated and ready", func(s appsv1beta1.SidecarSetStatus) bool {
		return s.MatchedPods == 2 && s.UpdatedPods == 2 && s.ReadyPods == 2 && s.UpdatedReadyPods == 2
	})
	for _, p := range clonePods(ctx, t, f, ns, name) {
		old := before[p.Name]
		if p.UID != old.UID {
			t.Errorf("pod %s (uid %s) was %s: a resize keeps the pod", p.Name, p.UID, old.UID)
		}
		for _, c := range []string{"main", "agent"} {
			now, was := framework.ContainerStatusOf(&p, c), framework.ContainerStatusOf(&old, c)
			if now == nil || was == nil || now.ContainerID != was.ContainerID || now.RestartCount != was.RestartCount {
				t.Errorf("pod %s: container %s is %s, was %s: a resize with resizePolicy NotRequired restarts nothing",
					p.Name, c, framework.DescribeContainerStatus(now), framework.DescribeContainerStatus(was))
			}
		}
	}
}
