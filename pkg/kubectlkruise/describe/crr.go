package describe

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// describeCRR shows a ContainerRecreateRequest: its pod and node, the
// strategy, and each container's phase with the reason it failed.
func describeCRR(ctx context.Context, o *Options, name string) (string, error) {
	crr, err := o.Kruise.AppsV1beta1().ContainerRecreateRequests(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("containerrecreaterequest %s/%s not found: list them with `kubectl get crr -n %s`", o.Namespace, name, o.Namespace)
	}
	if err != nil {
		return "", fmt.Errorf("reading containerrecreaterequest %s/%s: %w", o.Namespace, name, err)
	}
	p := newPage(o.now())
	p.meta(crr.ObjectMeta)
	p.line(0, "Pod:\t%s", crr.Spec.PodName)
	p.line(0, "Node:\t%s", orNone(crr.Labels[appsv1alpha1.ContainerRecreateRequestNodeNameKey]))
	strategy(p, crr.Spec)
	p.line(0, "Phase:\t%s", orNone(string(crr.Status.Phase)))
	if crr.Status.Message != "" {
		p.line(0, "Message:\t%s", crr.Status.Message)
	}
	if crr.Status.CompletionTime != nil {
		p.line(0, "Completed:\t%s (%s after creation)", timestamp(*crr.Status.CompletionTime), crr.Status.CompletionTime.Sub(crr.CreationTimestamp.Time))
	}
	containers(p, crr)
	if len(crr.Status.Conditions) > 0 {
		p.line(0, "Conditions:")
		p.line(1, "Type\tStatus\tReason\tAge\tMessage")
		p.line(1, "----\t------\t------\t---\t-------")
		for _, c := range crr.Status.Conditions {
			p.line(1, "%s\t%s\t%s\t%s\t%s", c.Type, c.Status, c.Reason, p.age(c.LastTransitionTime), c.Message)
		}
	}
	o.events(ctx, p, crr.Namespace, "ContainerRecreateRequest", crr.Name, crr.UID)
	return p.String(), nil
}

func strategy(p *page, spec appsv1beta1.ContainerRecreateRequestSpec) {
	s := spec.Strategy
	if s == nil {
		s = &appsv1beta1.ContainerRecreateRequestStrategy{}
	}
	failurePolicy := s.FailurePolicy
	if failurePolicy == "" {
		failurePolicy = appsv1beta1.ContainerRecreateRequestFailurePolicyFail
	}
	p.line(0, "Strategy:")
	p.line(1, "Failure Policy:\t%s", failurePolicy)
	p.line(1, "Ordered Recreate:\t%t", s.OrderedRecreate)
	p.line(1, "Force Recreate:\t%t", s.ForceRecreate)
	p.line(1, "Termination Grace Period:\t%s", seconds(s.TerminationGracePeriodSeconds, "the pod's"))
	p.line(1, "Unready Grace Period:\t%s", seconds(s.UnreadyGracePeriodSeconds, "none"))
	p.line(1, "Min Started Seconds:\t%d", s.MinStartedSeconds)
	p.line(0, "Active Deadline:\t%s", seconds(spec.ActiveDeadlineSeconds, "none"))
	if spec.TTLSecondsAfterFinished != nil {
		p.line(0, "TTL After Finished:\t%ds", *spec.TTLSecondsAfterFinished)
	}
}

func seconds[T int32 | int64](v *T, unset string) string {
	if v == nil {
		return unset
	}
	return fmt.Sprintf("%ds", *v)
}

// containers is the table of the requested containers: phase, whether the
// old instance was stopped, the instance replaced, and the message.
func containers(p *page, crr *appsv1beta1.ContainerRecreateRequest) {
	states := map[string]appsv1beta1.ContainerRecreateRequestContainerRecreateState{}
	for _, s := range crr.Status.ContainerRecreateStates {
		states[s.Name] = s
	}
	p.line(0, "Containers:")
	p.line(1, "Name\tPhase\tKilled\tRestarts Before\tMessage")
	p.line(1, "----\t-----\t------\t---------------\t-------")
	for _, c := range crr.Spec.Containers {
		s, ok := states[c.Name]
		phase := string(s.Phase)
		if !ok {
			phase = "<not started>"
		}
		restarts := "-"
		if c.StatusContext != nil {
			restarts = fmt.Sprint(c.StatusContext.RestartCount)
		}
		p.line(1, "%s\t%s\t%t\t%s\t%s", c.Name, phase, s.IsKilled, restarts, orNone(s.Message))
	}
}
