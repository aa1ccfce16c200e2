//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/test/e2e/framework"
)

// ---- expectations ----

// crrCompleted expects the CRR to be Completed with a message containing message, every
// container Failed (unless succeeded is set: then every container Succeeded), and, unless
// reason is empty, an Event with reason whose message contains message.
func crrCompleted(name, message string, succeeded bool, reason string) func(context.Context, *malEnv) (bool, string, error) {
	return func(ctx context.Context, e *malEnv) (bool, string, error) {
		crr, err := e.kc.AppsV1alpha1().ContainerRecreateRequests(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		seen := fmt.Sprintf("phase=%q message=%q states=%+v labels=%v", crr.Status.Phase, crr.Status.Message, crr.Status.ContainerRecreateStates, crr.Labels)
		if crr.Status.Phase != appsv1alpha1.ContainerRecreateRequestCompleted {
			return false, seen, nil
		}
		if !strings.Contains(crr.Status.Message, message) {
			return false, seen, fmt.Errorf("completed with message %q, want it to contain %q", crr.Status.Message, message)
		}
		want := appsv1alpha1.ContainerRecreateRequestFailed
		if succeeded {
			want = appsv1alpha1.ContainerRecreateRequestSucceeded
		}
		if len(crr.Status.ContainerRecreateStates) != len(crr.Spec.Containers) {
			return false, seen, fmt.Errorf("%d container states for %d containers", len(crr.Status.ContainerRecreateStates), len(crr.Spec.Containers))
		}
		for _, st := range crr.Status.ContainerRecreateStates {
			if st.Phase != want {
				return false, seen, fmt.Errorf("container %s is %s, want %s", st.Name, st.Phase, want)
			}
		}
		if _, active := crr.Labels[appsv1alpha1.ContainerRecreateRequestActiveKey]; active {
			return false, seen + " (active label not removed yet)", nil
		}
		if reason == "" {
			return true, seen, nil
		}
		return hasEvent(ctx, e, e.ns, "ContainerRecreateRequest", name, reason, message)
	}
}

// crrEvent expects an Event about the CRR with reason and a message containing substrings.
func crrEvent(name, reason string, substrings ...string) func(context.Context, *malEnv) (bool, string, error) {
	return func(ctx context.Context, e *malEnv) (bool, string, error) {
		return hasEvent(ctx, e, e.ns, "ContainerRecreateRequest", name, reason, substrings...)
	}
}

func hasEvent(ctx context.Context, e *malEnv, namespace, kind, name, reason string, substrings ...string) (bool, string, error) {
	events, err := e.f.ObjectEvents(ctx, namespace, kind, name)
	if err != nil {
		return false, "", err
	}
	ok, seen := framework.HasEvent(events, reason, substrings...)
	return ok, seen, nil
}

// pullJobFinished expects the ImagePullJob (of version gvr) to have finished with a message
// containing message and, unless reason is empty, an Event with reason containing event.
func pullJobFinished(gvr schema.GroupVersionResource, name, message, reason, event string) func(context.Context, *malEnv) (bool, string, error) {
	return func(ctx context.Context, e *malEnv) (bool, string, error) {
		u, err := e.dyn.Resource(gvr).Namespace(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		msg, _, _ := unstructured.NestedString(u.Object, "status", "message")
		done, _, _ := unstructured.NestedString(u.Object, "status", "completionTime")
		seen := fmt.Sprintf("completionTime=%q message=%q", done, msg)
		if done == "" {
			return false, seen, nil
		}
		if !strings.Contains(msg, message) {
			return false, seen, fmt.Errorf("finished with message %q, want it to contain %q", msg, message)
		}
		if reason == "" {
			return true, seen, nil
		}
		return hasEvent(ctx, e, e.ns, "ImagePullJob", name, reason, event)
	}
}

// pullJobEvent expects an Event about the ImagePullJob with reason and substrings, and the job
// to finish.
func pullJobEvent(name, reason string, substrings ...string) func(context.Context, *malEnv) (bool, string, error) {
	finished := pullJobFinished(gvrPullJob, name, "", "", "")
	return func(ctx context.Context, e *malEnv) (bool, string, error) {
		if ok, seen, err := hasEvent(ctx, e, e.ns, "ImagePullJob", name, reason, substrings...); !ok || err != nil {
			return ok, seen, err
		}
		return finished(ctx, e)
	}
}

// listJobFinished expects the ImageListPullJob to finish; check then judges its status.
func listJobFinished(name string, check func(*appsv1beta1.ImageListPullJob) error) func(context.Context, *malEnv) (bool, string, error) {
	return func(ctx context.Context, e *malEnv) (bool, string, error) {
		job, err := e.kc.AppsV1beta1().ImageListPullJobs(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := job.Status
		var failed []string
		for _, fi := range s.FailedImageStatuses {
			failed = append(failed, fmt.Sprintf("%s(%s: %s)", fi.Name, fi.ImagePullJob, fi.Message))
		}
		seen := fmt.Sprintf("desired=%d completed=%d succeeded=%d active=%d failedImages=%v completionTime=%v",
			s.Desired, s.Completed, s.Succeeded, s.Active, failed, s.CompletionTime)
		if s.CompletionTime == nil {
			return false, seen, nil
		}
		if err := check(job); err != nil {
			return false, seen, err
		}
		return true, seen, nil
	}
}

// nodeImageTagFailed expects kruise-daemon to report the tag of repo on the real node's
// NodeImage as Failed with a message containing message.
func nodeImageTagFailed(repo, tag, message string) func(context.Context, *malEnv) (bool, string, error) {
	return func(ctx context.Context, e *malEnv) (bool, string, error) {
		ni, err := e.kc.AppsV1beta1().NodeImages().Get(ctx, framework.NodeName(), metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		seen := framework.DescribeNodeImageTag(ni, repo, tag)
		for _, st := range framework.TagStatusesOf(ni, repo, tag) {
			if st.Phase != appsv1beta1.ImagePhaseFailed {
				continue
			}
			if !strings.Contains(st.Message, message) {
				return false, seen, fmt.Errorf("failed with message %q, want it to contain %q", st.Message, message)
			}
			return true, seen, nil
		}
		return false, seen, nil
	}
}

// jobPodEvent expects an Event with reason and substrings about the pod of the Job and, with
// complete, the Job to complete.
func jobPodEvent(job string, complete bool, reason string, substrings ...string) func(context.Context, *malEnv) (bool, string, error) {
	return func(ctx context.Context, e *malEnv) (bool, string, error) {
		pod, seen, err := jobPod(ctx, e, job)
		if pod == nil || err != nil {
			return false, seen, err
		}
		if ok, seen, err := hasEvent(ctx, e, e.ns, "Pod", pod.Name, reason, substrings...); !ok || err != nil {
			return false, seen + "; pod: " + framework.DescribeSidecarPod(pod), err
		}
		if !complete {
			return true, "", nil
		}
		return jobComplete(ctx, e, job)
	}
}

func jobPod(ctx context.Context, e *malEnv, job string) (*corev1.Pod, string, error) {
	pods, err := e.f.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil {
		return nil, "", err
	}
	if len(pods.Items) != 1 {
		return nil, fmt.Sprintf("%d pods of job %s", len(pods.Items), job), nil
	}
	return &pods.Items[0], "", nil
}

func jobComplete(ctx context.Context, e *malEnv, name string) (bool, string, error) {
	job, err := e.f.Client.BatchV1().Jobs(e.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, "", err
	}
	switch complete, failed := framework.JobOutcome(job); {
	case complete:
		return true, "Complete", nil
	case failed != nil:
		return false, "", fmt.Errorf("job %s failed: %s: %s", name, failed.Reason, failed.Message)
	}
	return false, fmt.Sprintf("job active=%d succeeded=%d failed=%d", job.Status.Active, job.Status.Succeeded, job.Status.Failed), nil
}

// both expects a and then b.
func both(a, b func(context.Context, *malEnv) (bool, string, error)) func(context.Context, *malEnv) (bool, string, error) {
	return func(ctx context.Context, e *malEnv) (bool, string, error) {
		if ok, seen, err := a(ctx, e); !ok || err != nil {
			return ok, seen, err
		}
		return b(ctx, e)
	}
}

// completedCRRMap is the ready condition of createThenUpdate for a CRR: once Completed, nothing
// but the test writes it, so the update cannot meet a conflict instead of the validation.
func completedCRRMap(u *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return phase == string(appsv1alpha1.ContainerRecreateRequestCompleted)
}

// crrWaiting is the expectation of a request that waits for its pod to start: Admitted False
// with reason WaitingForPod and the message, not completed.
func crrWaiting(name, message string) func(context.Context, *malEnv) (bool, string, error) {
	return func(ctx context.Context, e *malEnv) (bool, string, error) {
		crr, err := e.kc.AppsV1alpha1().ContainerRecreateRequests(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		cond := appsv1alpha1.AdmittedCondition(crr)
		if cond == nil {
			return false, fmt.Sprintf("phase %q, no Admitted condition yet", crr.Status.Phase), nil
		}
		if crr.Status.Phase == appsv1alpha1.ContainerRecreateRequestCompleted {
			return false, "", fmt.Errorf("completed (%q) instead of waiting for its pod", crr.Status.Message)
		}
		if cond.Status != metav1.ConditionFalse || cond.Reason != appsv1alpha1.ContainerRecreateRequestReasonWaitingForPod || cond.Message != message {
			return false, fmt.Sprintf("Admitted=%s reason %q message %q", cond.Status, cond.Reason, cond.Message), nil
		}
		return crrEvent(name, "WaitingForPod")(ctx, e)
	}
}
