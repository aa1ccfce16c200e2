//go:build e2e

package disruptive

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/nodekruise/kruise/pkg/apis/apps/pub"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/predownload"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// With gate PreDownloadImageForDaemonSetUpdate on (TestRolloutsUnderGates sets it), an Advanced
// DaemonSet that updates in place and holds its one pod (the cluster has one node) back with
// partition 1 gets an ImagePullJob for the new image, named <update revision>-main, selecting its
// pods not yet updated; the job pulls the image onto the node, through its NodeImage, while the
// pod still runs the old image. Lowering the partition then updates the pod in place, and the
// kubelet finds the image already there; once the update is done the job is deleted.
func daemonSetPreDownloadImage(t *testing.T) {
	ctx := framework.Context(t, 20*time.Minute)
	e := faultNewEnv(ctx, t, "predl-ds")
	variant := e.f.BusyboxVariant(t) // a new repository: on no node yet
	if _, present, err := e.rt.ImageStatus(ctx, variant); err != nil || present {
		t.Fatalf("image %s is on the node before the test (present=%t, err=%v)", variant, present, err)
	}

	ds := preDownloadDaemonSet(e.ns, "agent", e.f.Image("public/busybox:1.35"))
	ds, err := e.c.AppsV1beta1().DaemonSets(e.ns).Create(ctx, ds, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := preDownloadDaemonPod(ctx, t, e, "agent")

	ds = preDownloadUpdateDaemonSet(ctx, t, e, "agent", func(ds *appsv1beta1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = variant })
	hash := preDownloadWaitDaemonSetRevision(ctx, t, e, "agent", before.Labels[appsv1.ControllerRevisionHashLabelKey])
	revName := revision.Name("agent", hash)
	jobName := predownload.JobName(revName, "main")

	// The job: named after the update revision, owned by the DaemonSet, selecting the pod not at it.
	preDownloadWaitJob(ctx, t, e, "DaemonSet", "agent", ds.UID, jobName, variant, hash)

	// It completes on the node (the job counts what the node's NodeImage reported; the tag leaves
	// the NodeImage once the job is done) and the image is in the runtime, while the partition
	// still holds the pod at the old revision, untouched.
	job := framework.WaitImagePullJobFinished(ctx, t, e.c, e.ns, jobName, preDownloadTimeout)
	if s := job.Status; s.Desired != 1 || s.Succeeded != 1 || s.Failed != 0 {
		t.Fatalf("want the job to succeed on the one node: %s", framework.DescribeImagePullJob(ctx, e.c, job))
	}
	if _, present, err := e.rt.ImageStatus(ctx, variant); err != nil || !present {
		t.Fatalf("image %s is not on the node after the job succeeded (present=%t, err=%v)", variant, present, err)
	}
	held, err := e.f.Client.CoreV1().Pods(e.ns).Get(ctx, before.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if held.Labels[appsv1.ControllerRevisionHashLabelKey] == hash || held.Spec.Containers[0].Image == variant {
		t.Fatalf("pod %s was updated before the partition was lowered", held.Name)
	}
	rev, err := e.f.Client.AppsV1().ControllerRevisions(e.ns).Get(ctx, revName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Labels[appsv1beta1.ImagePreDownloadCreatedKey] != "true" {
		t.Errorf("update revision labels %v: want %s=true", rev.Labels, appsv1beta1.ImagePreDownloadCreatedKey)
	}
	e.f.WaitObjectEvent(ctx, t, e.ns, "DaemonSet", "agent", predownload.ReasonCreatedImagePullJob, time.Minute, jobName)

	// Lowering the partition updates the pod in place, with the image already on the node.
	preDownloadUpdateDaemonSet(ctx, t, e, "agent", func(ds *appsv1beta1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(0))
	})
	after := preDownloadDaemonPod(ctx, t, e, "agent")
	if after.UID != before.UID || after.Spec.Containers[0].Image != variant {
		t.Fatalf("pod %s (uid %s, image %s): want pod %s (uid %s) updated in place to %s", after.Name, after.UID,
			after.Spec.Containers[0].Image, before.Name, before.UID, variant)
	}
	podEvents, err := e.f.ObjectEvents(ctx, e.ns, "Pod", after.Name)
	if err != nil {
		t.Fatal(err)
	}
	if ok, desc := framework.HasEvent(podEvents, "Pulled", variant, "already present"); !ok {
		t.Errorf("the kubelet did not find %s already present for the in-place update: %s", variant, desc)
	}
	preDownloadWaitJobGone(ctx, t, e, jobName)
}

// preDownloadDaemonSet is a DaemonSet of busybox pods that updates in place, partition 1: on the
// one-node cluster its pod waits at the old revision until the partition is lowered.
func preDownloadDaemonSet(ns, name, image string) *appsv1beta1.DaemonSet {
	return &appsv1beta1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1beta1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: preDownloadTemplate(name, image),
			UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{
					Type:      appsv1beta1.InPlaceIfPossibleDaemonSetRollingUpdateType,
					Partition: ptr.To(intstr.FromInt32(1)),
				},
			},
		},
	}
}

// preDownloadUpdateDaemonSet changes DaemonSet name with mutate, retrying on conflicts.
func preDownloadUpdateDaemonSet(ctx context.Context, t *testing.T, e *faultEnv, name string, mutate func(*appsv1beta1.DaemonSet)) *appsv1beta1.DaemonSet {
	t.Helper()
	return preDownloadRetryUpdate(ctx, t, e.c.AppsV1beta1().DaemonSets(e.ns), name, mutate)
}

// preDownloadWaitDaemonSetRevision waits until the DaemonSet's status shows its new generation
// with an update revision other than old, and returns it (a hash, as the pods carry it).
func preDownloadWaitDaemonSetRevision(ctx context.Context, t *testing.T, e *faultEnv, name, old string) string {
	t.Helper()
	var hash string
	framework.WaitFor(ctx, t, preDownloadTimeout, "DaemonSet "+name+" at a new update revision", func(ctx context.Context) (bool, string, error) {
		ds, err := e.c.AppsV1beta1().DaemonSets(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		hash = ds.Status.UpdateRevision
		return ds.Status.ObservedGeneration == ds.Generation && hash != old, fmt.Sprintf("status %+v", ds.Status), nil
	})
	return hash
}

// preDownloadDaemonPod waits for the DaemonSet's one live pod, ready, with its in-place update
// (if any) finished, at the update revision, and returns it.
func preDownloadDaemonPod(ctx context.Context, t *testing.T, e *faultEnv, name string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	framework.WaitFor(ctx, t, preDownloadTimeout, fmt.Sprintf("DaemonSet %s with its pod ready at the update revision", name), func(ctx context.Context) (bool, string, error) {
		ds, err := e.c.AppsV1beta1().DaemonSets(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		list, err := e.f.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, "", err
		}
		if len(list.Items) != 1 || list.Items[0].DeletionTimestamp != nil {
			return false, fmt.Sprintf("%d pods", len(list.Items)), nil
		}
		pod = list.Items[0]
		ready := 0
		for _, c := range pod.Status.Conditions {
			if (c.Type == corev1.PodReady || c.Type == pub.InPlaceUpdateReady) && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
		st := ds.Status
		atUpdate := pod.Labels[appsv1.ControllerRevisionHashLabelKey] == st.UpdateRevision
		return st.ObservedGeneration == ds.Generation && ready == 2 && atUpdate,
			fmt.Sprintf("status %+v, pod %s revision %s conditions %v", st, pod.Name, pod.Labels[appsv1.ControllerRevisionHashLabelKey], pod.Status.Conditions), nil
	})
	return pod
}
