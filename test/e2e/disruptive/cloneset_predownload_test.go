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

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/workload/predownload"
	"github.com/nodekruise/kruise/pkg/workload/revision"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// preDownloadTimeout bounds each step: pods start and tiny images pull in seconds here.
const preDownloadTimeout = 3 * time.Minute

// With gate PreDownloadImageForInPlaceUpdate on (TestRolloutsUnderGates sets it), a CloneSet
// of 4 that updates in place two pods first (partition 2) gets an ImagePullJob for the new image,
// named <update revision>-main, selecting its pods not yet at the update revision; the job pulls
// the image onto the node while the partition still holds two pods at the old revision; once the
// update is done the job is deleted.
func cloneSetPreDownloadImage(t *testing.T) {
	ctx := framework.Context(t, 20*time.Minute)
	e := faultNewEnv(ctx, t, "predl")
	variant := e.f.BusyboxVariant(t) // a new repository: on no node yet
	if _, present, err := e.rt.ImageStatus(ctx, variant); err != nil || present {
		t.Fatalf("image %s is on the node before the test (present=%t, err=%v)", variant, present, err)
	}

	cs := preDownloadCloneSet(e.ns, "web", e.f.Image("public/busybox:1.35"), 4)
	cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(2))
	cs, err := e.c.AppsV1beta1().CloneSets(e.ns).Create(ctx, cs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	preDownloadWaitUpdated(ctx, t, e, "web", 4)

	cs = preDownloadSetImage(ctx, t, e, "web", variant)
	st := preDownloadWaitRevisions(ctx, t, e, "web")
	jobName := st.UpdateRevision + "-main"

	// The job: named after the update revision, owned by the CloneSet, selecting the pods not at it.
	preDownloadWaitJob(ctx, t, e, "CloneSet", "web", cs.UID, jobName, variant, st.UpdateRevision)

	// It completes on the node, and the image is there, while two pods still wait at the old revision.
	job := framework.WaitImagePullJobFinished(ctx, t, e.c, e.ns, jobName, preDownloadTimeout)
	if s := job.Status; s.Desired != 1 || s.Succeeded != 1 || s.Failed != 0 {
		t.Fatalf("want the job to succeed on the one node: %s", framework.DescribeImagePullJob(ctx, e.c, job))
	}
	if _, present, err := e.rt.ImageStatus(ctx, variant); err != nil || !present {
		t.Fatalf("image %s is not on the node after the job succeeded (present=%t, err=%v)", variant, present, err)
	}
	old := 0
	for _, p := range preDownloadPods(ctx, t, e, "web") {
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] != st.UpdateRevision {
			old++
		}
	}
	if old < 2 {
		t.Fatalf("%d pods at the old revision when the pull finished, want at least the 2 the partition holds", old)
	}
	t.Logf("the job finished with %d of 4 pods still at the old revision", old)
	rev, err := e.f.Client.AppsV1().ControllerRevisions(e.ns).Get(ctx, st.UpdateRevision, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev.Labels[appsv1beta1.ImagePreDownloadCreatedKey] != "true" || rev.Labels[revision.HashLabel] != job.Labels[revision.HashLabel] {
		t.Errorf("update revision labels %v, job labels %v: want %s=true and the same hash", rev.Labels, job.Labels, appsv1beta1.ImagePreDownloadCreatedKey)
	}
	e.f.WaitObjectEvent(ctx, t, e.ns, "CloneSet", "web", predownload.ReasonCreatedImagePullJob, time.Minute, jobName)

	// The rest of the update; once done, the job is deleted.
	preDownloadSetPartition(ctx, t, e, "web", 0)
	preDownloadWaitUpdated(ctx, t, e, "web", 4)
	preDownloadWaitJobGone(ctx, t, e, jobName)
}

// preDownloadCloneSet is a CloneSet of busybox pods that updates in place, one pod at a time.
func preDownloadCloneSet(ns, name, image string, replicas int32) *appsv1beta1.CloneSet {
	return &appsv1beta1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1beta1.CloneSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: preDownloadTemplate(name, image),
			UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{
				Type: appsv1beta1.RollingUpdateCloneSetUpdateStrategyType,
				RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{
					PodUpdatePolicy: appsv1beta1.InPlaceIfPossibleCloneSetPodUpdateStrategyType,
					MaxUnavailable:  ptr.To(intstr.FromInt32(1)),
				},
			},
		},
	}
}

// preDownloadUpdate changes CloneSet name with mutate, retrying on conflicts.
func preDownloadUpdate(ctx context.Context, t *testing.T, e *faultEnv, name string, mutate func(*appsv1beta1.CloneSet)) *appsv1beta1.CloneSet {
	t.Helper()
	return preDownloadRetryUpdate(ctx, t, e.c.AppsV1beta1().CloneSets(e.ns), name, mutate)
}

func preDownloadSetImage(ctx context.Context, t *testing.T, e *faultEnv, name, image string) *appsv1beta1.CloneSet {
	return preDownloadUpdate(ctx, t, e, name, func(cs *appsv1beta1.CloneSet) { cs.Spec.Template.Spec.Containers[0].Image = image })
}

func preDownloadSetPartition(ctx context.Context, t *testing.T, e *faultEnv, name string, partition int32) *appsv1beta1.CloneSet {
	return preDownloadUpdate(ctx, t, e, name, func(cs *appsv1beta1.CloneSet) {
		cs.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(partition))
	})
}

// preDownloadWaitRevisions waits until the CloneSet's status shows its new generation with an
// update revision other than the current one, and returns the status.
func preDownloadWaitRevisions(ctx context.Context, t *testing.T, e *faultEnv, name string) appsv1beta1.CloneSetStatus {
	t.Helper()
	var st appsv1beta1.CloneSetStatus
	framework.WaitFor(ctx, t, preDownloadTimeout, "CloneSet "+name+" at a new update revision", func(ctx context.Context) (bool, string, error) {
		cs, err := e.c.AppsV1beta1().CloneSets(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st = cs.Status
		return st.ObservedGeneration == cs.Generation && st.UpdateRevision != st.CurrentRevision, fmt.Sprintf("status %+v", st), nil
	})
	return st
}

// preDownloadWaitUpdated waits until every one of want pods is updated and available (the
// partition permitting: updatedReplicas counts only the pods moved).
func preDownloadWaitUpdated(ctx context.Context, t *testing.T, e *faultEnv, name string, want int32) {
	t.Helper()
	framework.WaitFor(ctx, t, preDownloadTimeout, fmt.Sprintf("CloneSet %s with %d pods updated and available", name, want), func(ctx context.Context) (bool, string, error) {
		cs, err := e.c.AppsV1beta1().CloneSets(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := cs.Status
		return s.ObservedGeneration == cs.Generation && s.Replicas == want && s.UpdatedReplicas == want && s.UpdatedReadyReplicas == want &&
			s.AvailableReplicas == want && s.CurrentRevision == s.UpdateRevision, fmt.Sprintf("status %+v", s), nil
	})
}

func preDownloadPods(ctx context.Context, t *testing.T, e *faultEnv, name string) []corev1.Pod {
	t.Helper()
	list, err := e.f.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}
