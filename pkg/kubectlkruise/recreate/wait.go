package recreate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

// progress remembers what has been printed, so that each change is
// printed once.
type progress struct {
	phases  map[string]string
	waiting string
}

// wait follows crr until it completes, printing one line per change.
func (o *Options) wait(ctx context.Context, crr *appsv1beta1.ContainerRecreateRequest) error {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	p := &progress{phases: map[string]string{}}
	var last *appsv1beta1.ContainerRecreateRequest
	err := follow(ctx, o.Kruise, crr, func(current *appsv1beta1.ContainerRecreateRequest) (bool, error) {
		last = current
		p.print(o.Out, current)
		if current.Status.Phase != appsv1beta1.ContainerRecreateRequestCompleted {
			return false, nil
		}
		if err := outcome(current); err != nil {
			return true, err
		}
		fmt.Fprintf(o.Out, "containerrecreaterequest %s completed: %s recreated\n", current.Name, cliutil.Count(len(current.Spec.Containers), "container"))
		return true, nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s waiting for containerrecreaterequest %s/%s (%s); it goes on: check it with `kubectl kruise describe crr/%s`",
			o.Timeout, last.Namespace, last.Name, summary(last), last.Name)
	}
	return err
}

// print writes the changes since the last call: the wait for the pod,
// and each container's phase.
func (p *progress) print(out io.Writer, crr *appsv1beta1.ContainerRecreateRequest) {
	if c := meta.FindStatusCondition(crr.Status.Conditions, "Admitted"); c != nil && c.Status == metav1.ConditionFalse {
		if line := c.Reason + ": " + c.Message; line != p.waiting {
			p.waiting = line
			fmt.Fprintf(out, "waiting for pod %s: %s\n", crr.Spec.PodName, line)
		}
	}
	for _, s := range crr.Status.ContainerRecreateStates {
		phase := string(s.Phase)
		if s.Message != "" {
			phase += " (" + s.Message + ")"
		}
		if p.phases[s.Name] == phase {
			continue
		}
		p.phases[s.Name] = phase
		fmt.Fprintf(out, "container %s: %s\n", s.Name, phase)
	}
}

// outcome is nil when every container was recreated, and otherwise an
// error naming the failed containers and why.
func outcome(crr *appsv1beta1.ContainerRecreateRequest) error {
	var failed []string
	succeeded := 0
	for _, s := range crr.Status.ContainerRecreateStates {
		switch s.Phase {
		case appsv1beta1.ContainerRecreateRequestSucceeded:
			succeeded++
		default:
			reason := s.Message
			if reason == "" {
				reason = crr.Status.Message
			}
			if reason == "" {
				reason = "no reason given"
			}
			failed = append(failed, fmt.Sprintf("%s (%s: %s)", s.Name, s.Phase, reason))
		}
	}
	if len(failed) == 0 && succeeded == len(crr.Spec.Containers) {
		return nil
	}
	if len(failed) == 0 {
		return fmt.Errorf("containerrecreaterequest %s/%s completed without recreating its containers: %s", crr.Namespace, crr.Name, crr.Status.Message)
	}
	return fmt.Errorf("containerrecreaterequest %s/%s completed, but %d of %d containers were not recreated: %s",
		crr.Namespace, crr.Name, len(failed), len(crr.Spec.Containers), strings.Join(failed, "; "))
}

// summary is the request's phase and its containers', for a timeout.
func summary(crr *appsv1beta1.ContainerRecreateRequest) string {
	phase := string(crr.Status.Phase)
	if phase == "" {
		phase = "not picked up yet"
	}
	parts := []string{"phase " + phase}
	for _, s := range crr.Status.ContainerRecreateStates {
		parts = append(parts, fmt.Sprintf("%s %s", s.Name, s.Phase))
	}
	return strings.Join(parts, ", ")
}
