//go:build bench

package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// dsPreDownloadSamples is how many in-place updates are timed per setting of the gate.
var dsPreDownloadSamples = envInt("BENCH_DS_PREDOWNLOAD_SAMPLES", 3)

// TestDaemonSetPreDownloadLatency measures what pre-download saves an Advanced DaemonSet's pod
// updated in place to an image its node does not have (busybox plus a random layer of
// BENCH_PREDOWNLOAD_LAYER_MIB): the time the pod is not Ready, from Ready=False to Ready=True
// again. The DaemonSet holds its pod back with partition 1 while its image is changed; the
// partition is then lowered to 0, once the pre-download job has finished when there is one.
// First with gate PreDownloadImageForDaemonSetUpdate off (the kubelet pulls after stopping the
// container), then on (the image is on the node before the update). Run it under the cluster's
// exclusive lock: it restarts the controller.
func TestDaemonSetPreDownloadLatency(t *testing.T) {
	f := framework.New(t)
	ctx := framework.Context(t, 40*time.Minute)
	ns := f.NewNamespace(ctx, t, "bench-dspredl")

	results := map[bool][]dsPreDownloadSample{}
	for _, on := range []bool{false, true} {
		f.SetControllerFeatureGate(ctx, t, "PreDownloadImageForDaemonSetUpdate", on)
		for i := range dsPreDownloadSamples {
			s := dsPreDownloadOnce(ctx, t, f, ns, fmt.Sprintf("agent-%t-%d", on, i), on)
			t.Logf("pre-download %-5t sample %d: not Ready %s, partition lowered → Ready %s, pull job %s",
				on, i, s.notReady.Round(time.Millisecond), s.total.Round(time.Millisecond), s.job.Round(time.Millisecond))
			results[on] = append(results[on], s)
		}
	}
	off, on := dsPreDownloadMedians(results[false]), dsPreDownloadMedians(results[true])
	t.Logf("RESULT Advanced DaemonSet pod updated in place to a new %d MiB image, median of %d: "+
		"not Ready %s without pre-download, %s with (ratio %.2f); partition lowered → Ready %s vs %s; pull job %s (before the partition was lowered)",
		preDownloadLayerMiB, dsPreDownloadSamples, off.notReady.Round(time.Millisecond), on.notReady.Round(time.Millisecond),
		off.notReady.Seconds()/on.notReady.Seconds(), off.total.Round(time.Millisecond), on.total.Round(time.Millisecond),
		on.job.Round(time.Millisecond))
}

type dsPreDownloadSample struct{ notReady, total, job time.Duration }

func dsPreDownloadMedians(s []dsPreDownloadSample) dsPreDownloadSample {
	median := func(get func(dsPreDownloadSample) time.Duration) time.Duration {
		v := make([]time.Duration, 0, len(s))
		for _, x := range s {
			v = append(v, get(x))
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return dsPreDownloadSample{
		notReady: median(func(x dsPreDownloadSample) time.Duration { return x.notReady }),
		total:    median(func(x dsPreDownloadSample) time.Duration { return x.total }),
		job:      median(func(x dsPreDownloadSample) time.Duration { return x.job }),
	}
}

// dsPreDownloadOnce creates DaemonSet name, changes its image behind partition 1, waits for the
// pre-download job when on, then lowers the partition and times the pod's update.
func dsPreDownloadOnce(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string, on bool) dsPreDownloadSample {
	t.Helper()
	kc := f.KruiseClient(t)
	dsc := kc.AppsV1beta1().DaemonSets(ns)
	ds := &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{corev1.LabelHostname: framework.NodeName()},
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{Name: "main", Image: image,
						Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}}},
				},
			},
			UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{
					Type:      appsv1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType,
					Partition: ptr.To(intstr.FromInt32(1)),
				},
			},
		},
	}
	if _, err := dsc.Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := dsc.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting DaemonSet %s: %v", name, err)
		}
	}()
	pod := dsPreDownloadReadyPod(ctx, t, f, ns, name, image)
	newImage := f.Variant(t, "public/busybox:1.35", int64(preDownloadLayerMiB)<<20) // on no node yet

	changed := time.Now()
	dsPreDownloadUpdate(ctx, t, f, ns, name, func(ds *appsv1beta1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = newImage })
	var s dsPreDownloadSample
	if on {
		framework.WaitFor(ctx, t, 10*time.Minute, "the pre-download job of "+newImage, func(ctx context.Context) (bool, string, error) {
			jobs, err := kc.AppsV1beta1().ImagePullJobs(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, "", err
			}
			for _, j := range jobs.Items {
				if j.Spec.Image == newImage && j.Status.CompletionTime != nil {
					if j.Status.Succeeded != 1 {
						return false, "", fmt.Errorf("pre-download job %s finished without pulling on the node: %+v", j.Name, j.Status)
					}
					s.job = time.Since(changed)
					return true, "", nil
				}
			}
			return false, fmt.Sprintf("%d jobs, none finished for %s", len(jobs.Items), newImage), nil
		})
	} else {
		framework.WaitFor(ctx, t, time.Minute, name+" sees its new revision", func(ctx context.Context) (bool, string, error) {
			cur, err := dsc.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			return cur.Status.ObservedGeneration >= cur.Generation, fmt.Sprintf("status %+v", cur.Status), nil
		})
	}

	// The pod as it is now, held back by the partition: the watch starts from it.
	pod, err := f.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Containers[0].Image == newImage || !framework.PodReady(pod) {
		t.Fatalf("pod %s changed before the partition was lowered: image %s, ready %t", pod.Name, pod.Spec.Containers[0].Image, framework.PodReady(pod))
	}
	w, err := f.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + pod.Name, ResourceVersion: pod.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	lowered := time.Now()
	dsPreDownloadUpdate(ctx, t, f, ns, name, func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(0))
	})
	var unready time.Time
	deadline := time.After(5 * time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch of pod %s ended", pod.Name)
			}
			if ev.Type != watch.Modified {
				continue
			}
			p := ev.Object.(*corev1.Pod)
			ready := framework.PodReady(p)
			t.Logf("%s %.3f s: ready %t, image %s, %s", name, time.Since(lowered).Seconds(), ready, p.Spec.Containers[0].Image,
				framework.DescribeContainerStatus(framework.ContainerStatusOf(p, "main")))
			if !ready && unready.IsZero() {
				unready = time.Now()
			}
			if ready && !unready.IsZero() && p.Spec.Containers[0].Image == newImage {
				now := time.Now()
				s.notReady, s.total = now.Sub(unready), now.Sub(lowered)
				return s
			}
		case <-deadline:
			t.Fatalf("pod %s not updated and Ready within 5 minutes of the partition lowered", pod.Name)
		}
	}
}

// dsPreDownloadReadyPod waits for DaemonSet name's one pod to run img and be Ready.
func dsPreDownloadReadyPod(ctx context.Context, t *testing.T, f *framework.Framework, ns, name, img string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	framework.WaitFor(ctx, t, 3*time.Minute, "the pod of "+name+" Ready", func(ctx context.Context) (bool, string, error) {
		pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, "", err
		}
		if len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods.Items)), nil
		}
		pod = &pods.Items[0]
		return pod.Spec.Containers[0].Image == img && framework.PodReady(pod), "pod " + pod.Name + " not Ready", nil
	})
	return pod
}

// dsPreDownloadUpdate changes DaemonSet name with mutate, again on a conflict.
func dsPreDownloadUpdate(ctx context.Context, t *testing.T, f *framework.Framework, ns, name string, mutate func(*appsv1beta1.DaemonSet)) {
	t.Helper()
	updateRetrying(ctx, t, "updating "+name, f.KruiseClient(t).AppsV1beta1().DaemonSets(ns), name, mutate)
}
