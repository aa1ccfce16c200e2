package ejobaccess

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Decision is the answer for one requester and pod (or namespace).
type Decision struct {
	Allowed bool
	// Denied names the first permission refused ("create pods/exec") and the authorizer's reason.
	Denied string
}

// Ask asks the API server whether r holds every one of Checks on the pod name in namespace
// (every pod of it when name is empty); it stops at the first refusal.
func Ask(ctx context.Context, sars authorizationv1client.SubjectAccessReviewInterface, r Requester, namespace, name string) (Decision, error) {
	return AskFor(ctx, sars, r, Checks, namespace, name)
}

// AskFor is Ask for other permissions than an EphemeralJob's (a PodProbeMarker's exec probes
// need create pods/exec only).
func AskFor(ctx context.Context, sars authorizationv1client.SubjectAccessReviewInterface, r Requester, checks []Check, namespace, name string) (Decision, error) {
	for _, c := range checks {
		res, err := sars.Create(ctx, r.Review(c, namespace, name), metav1.CreateOptions{})
		if err != nil {
			return Decision{}, fmt.Errorf("asking whether %s may %s: %w", r.Username, c, err)
		}
		if !res.Status.Allowed || res.Status.Denied {
			why := c.String()
			if res.Status.Reason != "" {
				why += " (" + res.Status.Reason + ")"
			}
			return Decision{Denied: why}, nil
		}
	}
	return Decision{Allowed: true}, nil
}
