//go:build e2e

package e2e

import (
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
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// An image updated in place on a pod with a readiness probe: once the kubelet has synced the new
// spec (status.observedGeneration), the controller releases the InPlaceUpdateReady gate (True,
// reason ContainersRestarting) so that the kubelet's sync reporting the new container already has
// it, and writes it again without a reason when the new container runs. Once the kubelet has
// taken the new spec, the pod is never Ready on its old container. (Before that, the kubelet's
// periodic status reconcile may write back the Ready=True it last computed over the Ready=False
// kruise wrote with the gate, while the old container still runs: see docs/cloneset.md.)
//
// The old container stops listening at once on TERM but exits only 3 s later: the gate is
// released while the old container is still there, failing its probe, which is when a Ready
// computed from the released gate would show on the wrong container.
func TestCloneSetInPlaceGateReleasedToKubelet(t *testing.T) {
	t.Parallel()
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 5*time.Minute)
	ns := f.NewNamespace(ctx, t, "cloneset-gate")
	variant := f.BusyboxVariant(t)

	cs := &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "gate", Namespace: ns},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "gate"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "gate"}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](10),
					Containers: []corev1.Container{{
						Name: "main", Image: f.Image("public/busybox:1.35"),
						Command: []string{"sh", "-c", `httpd -f -p 8080 -h /tmp & pid=$!; trap 'kill $pid; sleep 3; exit 0' TERM; wait $pid; while true; do sleep 1; done`},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
							PeriodSeconds: 1, FailureThreshold: 1,
						},
					}},
				},
			},
			UpdateStrategy: appsv1alpha1.CloneSetUpdateStrategy{Type: appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
		},
	}
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CloneSet: %v", err)
	}
	waitCloneSet(ctx, t, kc, ns, "gate", 1)
	before := clonePods(ctx, t, f, ns, "gate")[0]
	oldID := framework.ContainerStatusOf(&before, "main").ContainerID
	rec := recordClonePods(ctx, t, f, ns, "gate")

	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":%q}]`, variant)
	if _, err := kc.AppsV1alpha1().CloneSets(ns).Patch(ctx, "gate", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching the image: %v", err)
	}
	waitCloneSet(ctx, t, kc, ns, "gate", 1)
	after := waitClonePod(ctx, t, f, ns, "gate", "the update done: InPlaceUpdateReady True with no reason, pod Ready", func(p *corev1.Pod) bool {
		c := framework.PodConditionOf(p, pub.InPlaceUpdateReady)
		ready := framework.PodConditionOf(p, corev1.PodReady)
		return c != nil && c.Status == corev1.ConditionTrue && c.Reason == "" && c.Message == "" &&
			ready != nil && ready.Status == corev1.ConditionTrue
	})
	if after.UID != before.UID {
		t.Fatalf("pod %s replaced by %s: want the same pod", before.UID, after.UID)
	}
	if st := framework.ContainerStatusOf(after, "main"); st == nil || st.ContainerID == oldID || !st.Ready {
		t.Fatalf("container after the update: %s, want a new container, ready", framework.DescribeContainerStatus(st))
	}

	started, released := false, false
	republished := 0
	var trail []string
	for _, p := range rec.versions(before.UID) {
		gate := framework.PodConditionOf(&p, pub.InPlaceUpdateReady)
		ready := framework.PodConditionOf(&p, corev1.PodReady)
		st := framework.ContainerStatusOf(&p, "main")
		trail = append(trail, fmt.Sprintf("rv %s gen %d/%d gate %s Ready %s container %s",
			p.ResourceVersion, p.Generation, p.Status.ObservedGeneration, framework.DescribeCondition(gate), framework.DescribeCondition(ready), framework.DescribeContainerStatus(st)))
		if gate != nil && gate.Status == corev1.ConditionFalse {
			started = true
		}
		if !started {
			continue
		}
		if ready != nil && ready.Status == corev1.ConditionTrue && (st == nil || st.ContainerID == oldID || !st.Ready) {
			releasedHere := gate != nil && gate.Status == corev1.ConditionTrue && gate.Reason == pub.InPlaceUpdateRestartingReason
			if p.Status.ObservedGeneration >= p.Generation || releasedHere {
				t.Errorf("pod version %s is Ready during its update, after the kubelet took the new spec, without a new ready container: %s",
					p.ResourceVersion, framework.DescribeContainerStatus(st))
			} else {
				// The kubelet's periodic status reconcile writing back the Ready=True it last
				// computed, before its sync of the new spec: the old container still runs.
				republished++
			}
		}
		if gate != nil && gate.Status == corev1.ConditionTrue && gate.Reason == pub.InPlaceUpdateRestartingReason {
			released = true
			if p.Status.ObservedGeneration < p.Generation {
				t.Errorf("pod version %s: gate released at generation %d before the kubelet synced it (observed %d)", p.ResourceVersion, p.Generation, p.Status.ObservedGeneration)
			}
			if !strings.Contains(gate.Message, fmt.Sprintf("pod generation %d", p.Generation)) {
				t.Errorf("pod version %s: released gate's message %q does not name generation %d", p.ResourceVersion, gate.Message, p.Generation)
			}
		}
	}
	if !started || !released {
		t.Errorf("update started %v, gate released to the kubelet %v; want both", started, released)
	}
	if republished > 0 {
		t.Logf("%d pod version(s) Ready on the old container before the kubelet synced the new spec (its status cache written back)", republished)
	}
	if t.Failed() {
		t.Logf("pod versions:\n%s", strings.Join(trail, "\n"))
	}
}
