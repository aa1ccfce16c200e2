//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// InPlaceIfPossible resizes an Advanced DaemonSet's pod in place when only cpu and memory change
// (gate InPlaceWorkloadVerticalScaling, on by default): the same pod, its container not restarted
// (resizePolicy NotRequired, the default), the new values in its spec and in the resources the
// kubelet reports.
func TestDaemonSetResizesInPlace(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	f.SkipWithoutResize(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "daemonset-resize")

	sized := func(cpu, mem string) corev1.ResourceRequirements {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		return corev1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
	}
	ds := newDaemonSet(f, ns, "agent", func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateDaemonSet{Type: appsv1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType}
		ds.Spec.Template.Spec.Containers[0].Resources = sized("50m", "32Mi")
	})
	if _, err := kc.AppsV1beta1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DaemonSet: %v", err)
	}
	before := daemonPod(ctx, t, f, kc, ns, "agent")

	want := sized("80m", "48Mi")
	patchDaemonSet(ctx, t, kc, ns, "agent", `[{"op":"replace","path":"/spec/template/spec/containers/0/resources","value":`+
		`{"requests":{"cpu":"80m","memory":"48Mi"},"limits":{"cpu":"80m","memory":"48Mi"}}}]`)
	framework.WaitFor(ctx, t, daemonSetTimeout, "the pod resized in place and reported by the kubelet", func(ctx context.Context) (bool, string, error) {
		p, err := f.Client.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		gate := false
		for _, c := range p.Status.Conditions {
			gate = gate || (c.Type == pub.InPlaceUpdateReady && c.Status == corev1.ConditionTrue)
		}
		st := framework.ContainerStatusOf(p, "main")
		if st == nil || st.Resources == nil {
			return false, "no resources reported", nil
		}
		return gate && sameResources(p.Spec.Containers[0].Resources, want) && sameResources(*st.Resources, want),
			fmt.Sprintf("spec %s, reported %s, %s", describeResources(p.Spec.Containers[0].Resources), describeResources(*st.Resources),
				framework.DescribeContainerStatus(st)), nil
	})
	after := daemonPod(ctx, t, f, kc, ns, "agent")
	if after.UID != before.UID {
		t.Fatalf("pod %s (uid %s) replaced pod %s (uid %s): want the same pod resized", after.Name, after.UID, before.Name, before.UID)
	}
	st, old := after.Status.ContainerStatuses[0], before.Status.ContainerStatuses[0]
	if st.ContainerID != old.ContainerID || st.RestartCount != old.RestartCount {
		t.Errorf("container %s restarted %d times (was %s, %d): a resize with resizePolicy NotRequired restarts nothing",
			st.ContainerID, st.RestartCount, old.ContainerID, old.RestartCount)
	}
}
