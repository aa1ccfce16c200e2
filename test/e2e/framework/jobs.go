package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// BusyboxJob returns a Job of one busybox pod running script with sh -c. Grace periods are short
// and the Job does not retry, so a failure shows at once.
func BusyboxJob(namespace, name, image, script string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			TTLSecondsAfterFinished: ptr.To[int32](600),
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name:    "main",
						Image:   image,
						Command: []string{"sh", "-c", script},
					}},
				},
			},
		},
	}
}

// WaitJobComplete waits for the Job's Complete condition and fails the test early when the Job
// fails, with the reasons its pods show.
func (f *Framework) WaitJobComplete(ctx context.Context, t testing.TB, namespace, name string, timeout time.Duration) {
	t.Helper()
	WaitFor(ctx, t, timeout, fmt.Sprintf("job %s/%s Complete", namespace, name), func(ctx context.Context) (bool, string, error) {
		job, err := f.Client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		switch complete, failed := JobOutcome(job); {
		case complete:
			return true, "Complete", nil
		case failed != nil:
			return false, "", fmt.Errorf("job failed: %s: %s; pods: %s", failed.Reason, failed.Message, f.DescribePods(ctx, namespace, "job-name="+name))
		}
		return false, fmt.Sprintf("active=%d succeeded=%d failed=%d; pods: %s", job.Status.Active,
			job.Status.Succeeded, job.Status.Failed, f.DescribePods(ctx, namespace, "job-name="+name)), nil
	})
}

// JobOutcome reads a Job's conditions: complete once it is Complete, failed (the condition) once
// it Failed.
func JobOutcome(job *batchv1.Job) (complete bool, failed *batchv1.JobCondition) {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, nil
		case batchv1.JobFailed:
			return false, c
		}
	}
	return false, nil
}

// WaitJobFailed waits for the Job's Failed condition and fails the test early when the Job
// completes instead.
func (f *Framework) WaitJobFailed(ctx context.Context, t testing.TB, namespace, name string, timeout time.Duration) *batchv1.Job {
	t.Helper()
	var got *batchv1.Job
	WaitFor(ctx, t, timeout, fmt.Sprintf("job %s/%s Failed", namespace, name), func(ctx context.Context) (bool, string, error) {
		job, err := f.Client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		got = job
		for _, c := range job.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobFailed:
				return true, "Failed", nil
			case batchv1.JobComplete:
				return false, "", fmt.Errorf("job completed, want Failed; pods: %s", f.DescribeSidecarPods(ctx, namespace, "job-name="+name))
			}
		}
		return false, fmt.Sprintf("active=%d succeeded=%d failed=%d; pods: %s", job.Status.Active,
			job.Status.Succeeded, job.Status.Failed, f.DescribeSidecarPods(ctx, namespace, "job-name="+name)), nil
	})
	return got
}

// JobPod waits until the Job has exactly one pod and returns it.
func (f *Framework) JobPod(ctx context.Context, t testing.TB, namespace, job string) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	WaitFor(ctx, t, time.Minute, "the pod of job "+job, func(ctx context.Context) (bool, string, error) {
		pods, err := f.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
		if err != nil {
			return false, "", err
		}
		if len(pods.Items) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods.Items)), nil
		}
		got = &pods.Items[0]
		return true, "found", nil
	})
	return got
}
