//go:build bench

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// Settings of the pre-download benchmark.
var (
	preDownloadReplicas = envInt("BENCH_PREDOWNLOAD_REPLICAS", 5)
	// preDownloadLayerMiB is the size of the random layer added to busybox for the new image, so
	// that its pull takes a measurable time even from the loopback registry.
	preDownloadLayerMiB = envInt("BENCH_PREDOWNLOAD_LAYER_MIB", 64)
)

// TestCloneSetPreDownloadLatency measures, for a CloneSet of preDownloadReplicas busybox pods
// updated in place one at a time to an image no node has, the time from the template's update to
// every pod updated and ready: first with the controller as found (gate off by default), then
// with PreDownloadImageForInPlaceUpdate on (put back at the end). Run it under the cluster's
// exclusive lock: it restarts the controller.
func TestCloneSetPreDownloadLatency(t *testing.T) {
	f := framework.New(t)
	kc := f.KruiseClient(t)
	ctx := framework.Context(t, 30*time.Minute)
	ns := f.NewNamespace(ctx, t, "bench-predl")

	off := preDownloadRollout(ctx, t, f, kc, ns, "off")
	f.SetControllerFeatureGate(ctx, t, "PreDownloadImageForInPlaceUpdate", true)
	on := preDownloadRollout(ctx, t, f, kc, ns, "on")
	t.Logf("RESULT CloneSet in-place update of %d pods to a new %d MiB image, update → all updated and ready: "+
		"pre-download off %s, on %s (job finished %s after the update)", preDownloadReplicas, preDownloadLayerMiB,
		off.total.Round(10*time.Millisecond), on.total.Round(10*time.Millisecond), on.jobDone.Round(10*time.Millisecond))
}

type preDownloadResult struct{ total, jobDone time.Duration }

// preDownloadRollout creates a CloneSet, waits for its pods, then updates its image to a fresh
// one and times the rollout; with pre-download on it also times its ImagePullJob.
func preDownloadRollout(ctx context.Context, t *testing.T, f *framework.Framework, kc versioned.Interface, ns, label string) preDownloadResult {
	t.Helper()
	csName := "web-" + label
	cs := &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: csName, Namespace: ns},
		Spec: appsv1beta1.CloneSetSpec{
			Replicas: ptr.To(int32(preDownloadReplicas)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": csName}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": csName}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{Name: "main", Image: image,
						Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}}},
				},
			},
			UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
					PodUpdatePolicy: appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
					MaxUnavailable:  ptr.To(intstr.FromInt32(1)),
				},
			},
		},
	}
	if _, err := kc.AppsV1beta1().CloneSets(ns).Create(ctx, cs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	preDownloadWaitRolledOut(ctx, t, kc, ns, csName)
	newImage := f.Variant(t, "public/busybox:1.35", int64(preDownloadLayerMiB)<<20) // on no node yet

	start := time.Now()
	updateRetrying(ctx, t, "updating the image of "+csName, kc.AppsV1beta1().CloneSets(ns), csName, func(cur *appsv1beta1.CloneSet) {
		cur.Spec.Template.Spec.Containers[0].Image = newImage
	})
	var res preDownloadResult
	framework.WaitFor(ctx, t, 10*time.Minute, csName+" rolled out to "+newImage, func(ctx context.Context) (bool, string, error) {
		if res.jobDone == 0 {
			jobs, err := kc.AppsV1beta1().ImagePullJobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + csName})
			if err != nil {
				return false, "", err
			}
			for _, j := range jobs.Items {
				if j.Spec.Image == newImage && j.Status.CompletionTime != nil {
					res.jobDone = time.Since(start)
				}
			}
		}
		done, desc, err := preDownloadRolledOut(ctx, kc, ns, csName)
		if done {
			res.total = time.Since(start)
		}
		return done, desc, err
	})
	t.Logf("%s: update → all %d pods updated and ready in %s; pre-download job finished after %s (0: none)",
		csName, preDownloadReplicas, res.total.Round(10*time.Millisecond), res.jobDone.Round(10*time.Millisecond))
	return res
}

func preDownloadWaitRolledOut(ctx context.Context, t *testing.T, kc versioned.Interface, ns, name string) {
	t.Helper()
	framework.WaitFor(ctx, t, 5*time.Minute, name+" rolled out", func(ctx context.Context) (bool, string, error) {
		return preDownloadRolledOut(ctx, kc, ns, name)
	})
}

// preDownloadRolledOut: every pod at the update revision and ready, as the status says.
func preDownloadRolledOut(ctx context.Context, kc versioned.Interface, ns, name string) (bool, string, error) {
	cs, err := kc.AppsV1beta1().CloneSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, "", err
	}
	s, want := cs.Status, int32(preDownloadReplicas)
	return s.ObservedGeneration == cs.Generation && s.Replicas == want && s.UpdatedReadyReplicas == want && s.ReadyReplicas == want &&
		s.CurrentRevision == s.UpdateRevision, fmt.Sprintf("status %+v", s), nil
}
